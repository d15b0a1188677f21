//! One call's store: the WASI state its grants allow, and the limits enforced on it (memory
//! through the limiter, CPU time through epoch ticks); and, when a call fails, the verdict
//! told from what the store saw.

use std::fmt;
use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime::{CallHook, Engine, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::Sandbox;
use super::egress::{Denials, HttpEgress, socket_check};
use super::limits::{Limits, MemoryLimiter};
use super::output::LogPipe;
#[cfg(feature = "code-mode")]
use super::program::ProgramState;
use super::report::CallReports;
use crate::error::{CallError, TimeLimit};

/// The data of every store: one call's WASI state and its bookkeeping.
pub(crate) struct StoreState {
    pub(super) wasi: WasiCtx,
    pub(super) http: WasiHttpCtx,
    pub(super) table: ResourceTable,
    pub(super) egress: HttpEgress,
    pub(crate) limiter: MemoryLimiter,
    /// Epoch ticks of computing the call may still use.
    pub(crate) cpu_ticks_left: u64,
    pub(crate) stdout: LogPipe,
    pub(crate) stderr: LogPipe,
    pub(crate) denials: Denials,
    /// Time spent in WebAssembly, measured for profiled calls only.
    pub(crate) wasm_clock: WasmClock,
    /// The tool's progress reports and log lines, and where they go.
    pub(crate) reports: CallReports,
    /// A program's calls and output, in a code runner's store; `None` in a tool's.
    #[cfg(feature = "code-mode")]
    pub(crate) program: Option<ProgramState>,
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for StoreState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.egress,
        }
    }
}

impl Sandbox {
    /// A fresh state for one call: `cpu_ticks` of computing, and file operations on the call's
    /// thread or handed to a thread pool.
    fn store_state(
        &self,
        cpu_ticks: u64,
        file_io_on_call_thread: bool,
    ) -> anyhow::Result<StoreState> {
        let stdout = LogPipe::new(self.limits.max_log);
        let stderr = LogPipe::new(self.limits.max_log);
        let denials = Denials::default();

        let mut wasi = WasiCtx::builder();
        wasi.stdout(stdout.clone()).stderr(stderr.clone());
        wasi.envs(&self.env);
        wasi.allow_blocking_current_thread(file_io_on_call_thread);
        for (host, guest, perms) in &self.dirs {
            wasi.preopened_dir(host, guest, *perms)?;
        }
        if !self.sockets.is_empty() {
            wasi.allow_tcp(true)
                .allow_udp(true)
                .allow_ip_name_lookup(true)
                .socket_addr_check(socket_check(self.sockets.clone(), denials.clone()));
        } else {
            wasi.allow_tcp(false)
                .allow_udp(false)
                .allow_ip_name_lookup(false);
        }

        Ok(StoreState {
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            egress: HttpEgress::new(self.http.clone(), denials.clone()),
            limiter: MemoryLimiter::new(self.limits.memory),
            cpu_ticks_left: cpu_ticks,
            stdout,
            stderr,
            denials,
            wasm_clock: WasmClock::default(),
            reports: CallReports::default(),
            #[cfg(feature = "code-mode")]
            program: None,
        })
    }
}

/// What the engine decides about every store.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StoreSettings {
    /// How often the engine's epoch advances: the unit of the CPU budget.
    pub(crate) epoch_tick: Duration,
    /// Whether file operations run on the call's thread (else on a thread pool).
    pub(crate) file_io_on_call_thread: bool,
}

/// How many epoch ticks of computing `budget` allows (at least one).
fn cpu_ticks(budget: Duration, epoch_tick: Duration) -> u64 {
    let ticks = budget.as_nanos() / epoch_tick.as_nanos().max(1);
    u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
}

/// A fresh store for one call in `sandbox`: memory limiter on, and a CPU budget counted in
/// epoch ticks; each tick of computing also yields to other tasks, which is what lets the
/// wall-clock timeout and concurrent calls proceed while a tool spins.
pub(crate) fn new_store(
    engine: &Engine,
    sandbox: &Sandbox,
    engine_settings: StoreSettings,
    profiled: bool,
) -> anyhow::Result<Store<StoreState>> {
    let cpu_ticks = cpu_ticks(sandbox.limits.cpu_time, engine_settings.epoch_tick);
    let state = sandbox.store_state(cpu_ticks, engine_settings.file_io_on_call_thread)?;
    let mut store = Store::new(engine, state);
    if profiled {
        store.call_hook(|mut context, hook| {
            context.data_mut().wasm_clock.on(hook);
            Ok(())
        });
    }
    store.limiter(|state| &mut state.limiter);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|mut context| {
        let state = context.data_mut();
        if state.cpu_ticks_left == 0 {
            return Err(CpuTimeExceeded.into());
        }
        state.cpu_ticks_left -= 1;
        Ok(UpdateDeadline::Yield(1))
    });
    Ok(store)
}

/// The time a profiled call's store spends in the component's code, told by the store's call
/// hook: from each entry into WebAssembly to the matching return, the host functions and
/// wasmtime library calls made meanwhile included (and also counted apart).
#[derive(Debug, Default)]
pub(crate) struct WasmClock {
    depth: u32,
    entered: Option<Instant>,
    in_host_since: Option<Instant>,
    total: Duration,
    host: Duration,
}

impl WasmClock {
    fn on(&mut self, hook: CallHook) {
        match hook {
            CallHook::CallingWasm => {
                if self.depth == 0 {
                    self.entered = Some(Instant::now());
                }
                self.depth += 1;
            }
            CallHook::ReturningFromWasm => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0
                    && let Some(entered) = self.entered.take()
                {
                    self.total += entered.elapsed();
                }
            }
            CallHook::CallingHost => {
                if self.depth == 1 {
                    self.in_host_since = Some(Instant::now());
                }
            }
            CallHook::ReturningFromHost => {
                if let Some(since) = self.in_host_since.take() {
                    self.host += since.elapsed();
                }
            }
        }
    }

    /// The time in the component's code, and of it in host functions, since the last take.
    pub(crate) fn take(&mut self) -> (Duration, Duration) {
        (
            std::mem::take(&mut self.total),
            std::mem::take(&mut self.host),
        )
    }
}

/// The error a store's epoch callback raises when the call has used up its CPU time.
#[derive(Debug)]
struct CpuTimeExceeded;

impl fmt::Display for CpuTimeExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CPU time budget exhausted")
    }
}

impl std::error::Error for CpuTimeExceeded {}

/// Why a call's store produced no value.
pub(crate) enum Failure {
    /// Instantiating failed (or the component's start-up code trapped).
    Start(wasmtime::Error),
    /// The export trapped or failed.
    Run(wasmtime::Error),
}

/// What went wrong in a call that produced no value, told from what its store saw: a memory
/// limit, the CPU budget, a denied capability, or a crash.
pub(crate) fn verdict(
    failure: Failure,
    state: &StoreState,
    limits: &Limits,
    tool: String,
) -> CallError {
    if state.limiter.exceeded {
        return CallError::MemoryLimit {
            tool,
            limit: limits.memory,
        };
    }
    let error = match failure {
        Failure::Start(error) if error.is::<wasmtime::PoolConcurrencyLimitError>() => {
            return CallError::Instantiate {
                tool,
                source: anyhow::Error::from(error).context(
                    "the instance pool has no room left for this component's instances (core \
                     instances, memories or tables); raise RuntimeConfig::max_concurrent_calls, \
                     which the pool's room grows with",
                ),
            };
        }
        // The component's start-up code called `exit`.
        Failure::Start(error) => {
            return match exit_status(&error) {
                Some(status) => CallError::Exited {
                    tool,
                    status,
                    stderr: None,
                },
                None => CallError::Instantiate {
                    tool,
                    source: error.into(),
                },
            };
        }
        Failure::Run(error) => error,
    };
    if error.is::<CpuTimeExceeded>() {
        return CallError::Timeout {
            tool,
            kind: TimeLimit::CpuTime,
            limit: limits.cpu_time,
        };
    }
    if let Some(denial) = state.denials.first() {
        return CallError::CapabilityDenied {
            tool,
            capability: denial.what,
            grant: denial.grant,
        };
    }
    // After the denials: a tool refused a capability may exit for want of it, and the grant
    // to change is the news.
    if let Some(status) = exit_status(&error) {
        return CallError::Exited {
            tool,
            status,
            stderr: None,
        };
    }
    let trap = match error.downcast_ref::<wasmtime::Trap>() {
        Some(trap) => format!("wasm trap: {trap}"),
        None => format!("{error:#}"),
    };
    CallError::Trap {
        tool,
        trap,
        stderr: None,
    }
}

/// The status a guest gave WASI's `exit` (`wasi:cli/exit`), which wasmtime-wasi raises as an
/// [`I32Exit`](wasmtime_wasi::I32Exit) error to unwind the call.
fn exit_status(error: &wasmtime::Error) -> Option<i32> {
    error
        .downcast_ref::<wasmtime_wasi::I32Exit>()
        .map(|exit| exit.0)
}
