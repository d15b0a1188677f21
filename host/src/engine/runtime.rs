//! The wasmtime engine every component runs on, set up once per process.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wasmtime::component::Linker;
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store,
};

use super::cache::{CompileCache, CompileEvent, default_cache_dir};
use crate::sandbox::Sandbox;
use crate::sandbox::report::CoarseClock;
use crate::sandbox::store::{StoreSettings, StoreState, new_store};
use crate::telemetry::metrics::{Held, metrics};

/// Told when a component has to be compiled (it is not in the cache) and when that is over,
/// so a command-line front end can show progress: compiling a 15 MB component takes seconds.
pub type CompileObserver = Arc<dyn Fn(CompileEvent<'_>) + Send + Sync>;

/// How a [`Runtime`] is set up.
#[derive(Clone)]
pub struct RuntimeConfig {
    /// Where compiled components are cached. `None` compiles every component at every load.
    /// Defaults to [`default_cache_dir`].
    pub cache_dir: Option<PathBuf>,
    /// Whether to use wasmtime's pooling allocator: instance slots reserved up front, so a
    /// call's fresh instance costs microseconds. It reserves a lot of virtual (not resident)
    /// memory; turn it off where address space is limited. On by default.
    pub pooling: bool,
    /// How many calls may run at the same time with the pooling allocator: it reserves an
    /// instance slot for each. Calls beyond that wait for a free slot (their wall-clock
    /// timeout counting); they do not fail. Default 100.
    pub max_concurrent_calls: u32,
    /// How often running tools are checked against their CPU time budget, and made to yield
    /// to other tasks. Default 5 ms.
    pub epoch_tick: Duration,
    /// Whether a tool's file operations (in its granted directories) run right on the thread
    /// of its call: on a local disk they take microseconds, against tens of microseconds to
    /// hand each one to a thread pool and back. Turn it off when a granted directory is on a
    /// slow network file system, where one operation could hold up the other tasks of that
    /// thread. On by default.
    pub file_io_on_call_thread: bool,
    /// How many components may keep a spare instance: after a component's call, a fresh
    /// instance for its next call is made while the host is idle, so that the call finds it
    /// ready (each call still gets a new instance of its own). The pooling allocator reserves
    /// a slot for each, beside those of `max_concurrent_calls`. 0 turns it off. Default 8.
    pub spare_instances: u32,
    /// Told when a component is compiled; none by default.
    pub on_compile: Option<CompileObserver>,
}

impl std::fmt::Debug for RuntimeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeConfig")
            .field("cache_dir", &self.cache_dir)
            .field("pooling", &self.pooling)
            .field("max_concurrent_calls", &self.max_concurrent_calls)
            .field("epoch_tick", &self.epoch_tick)
            .field("file_io_on_call_thread", &self.file_io_on_call_thread)
            .field("spare_instances", &self.spare_instances)
            .field("on_compile", &self.on_compile.as_ref().map(|_| ".."))
            .finish()
    }
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            cache_dir: default_cache_dir(),
            pooling: true,
            max_concurrent_calls: 100,
            epoch_tick: Duration::from_millis(5),
            file_io_on_call_thread: true,
            spare_instances: 8,
            on_compile: None,
        }
    }
}

/// The engine, linker and compile cache shared by every component. Cheap to clone.
///
/// ```no_run
/// # async fn example() -> anyhow::Result<()> {
/// let runtime = toolhost::Runtime::new(toolhost::RuntimeConfig::default())?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    linker: Linker<StoreState>,
    cache: Option<CompileCache>,
    on_compile: Option<CompileObserver>,
    epoch_tick: Duration,
    file_io_on_call_thread: bool,
    ticker_stop: Arc<AtomicBool>,
    /// The milliseconds the epoch thread counts, for the rate bound of tools' reports.
    report_clock: CoarseClock,
    /// One permit per instance slot of the pool for calls; none without pooling.
    slots: Option<Arc<Semaphore>>,
    /// One permit per spare instance.
    spares: Arc<Semaphore>,
    /// One permit per call whose store may be dropped after its answer.
    retiring: Arc<Semaphore>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

impl Runtime {
    /// Sets up the engine: the component model, async calls, epoch interruption, and the
    /// pooling allocator unless turned off. Creates the compile cache's directory (`0700`)
    /// and fails when it cannot be trusted (another user owns it, or others can write it).
    pub fn new(config: RuntimeConfig) -> anyhow::Result<Self> {
        let mut wasm = Config::new();
        wasm.wasm_component_model(true);
        wasm.epoch_interruption(true);
        if config.pooling {
            wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling_config(
                config
                    .max_concurrent_calls
                    .saturating_add(config.spare_instances),
            )));
        }
        let engine =
            Engine::new(&wasm).map_err(|e| e.context("cannot set up the wasmtime engine"))?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| e.context("cannot add WASI to the linker"))?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(|e| e.context("cannot add wasi:http to the linker"))?;
        super::bindings::add_to_linker(&mut linker)
            .map_err(|e| e.context("cannot add toolhost:tool/report to the linker"))?;

        let cache = config.cache_dir.map(|dir| CompileCache::new(dir, &engine));
        if let Some(cache) = &cache {
            cache.open()?;
        }
        let ticker_stop = Arc::new(AtomicBool::new(false));
        let report_clock = CoarseClock::default();
        start_ticker(
            engine.clone(),
            config.epoch_tick,
            ticker_stop.clone(),
            report_clock.clone(),
        )?;

        Ok(Self {
            inner: Arc::new(Inner {
                engine,
                linker,
                cache,
                on_compile: config.on_compile,
                epoch_tick: config.epoch_tick,
                file_io_on_call_thread: config.file_io_on_call_thread,
                ticker_stop,
                report_clock,
                slots: config
                    .pooling
                    .then(|| Arc::new(Semaphore::new(config.max_concurrent_calls as usize))),
                spares: Arc::new(Semaphore::new(config.spare_instances as usize)),
                retiring: Arc::new(Semaphore::new(RETIRING_AT_ONCE)),
            }),
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The clock the rate bound of tools' reports reads.
    pub(crate) fn report_clock(&self) -> CoarseClock {
        self.inner.report_clock.clone()
    }

    pub(crate) fn linker(&self) -> &Linker<StoreState> {
        &self.inner.linker
    }

    pub(crate) fn cache(&self) -> Option<&CompileCache> {
        self.inner.cache.as_ref()
    }

    pub(crate) fn compile_observer(&self) -> Option<CompileObserver> {
        self.inner.on_compile.clone()
    }

    /// Waits until an instance slot is free and keeps it until the returned value is dropped;
    /// `None` when `deadline` passes first. Without pooling there is nothing to wait for.
    pub(crate) async fn call_slot(
        &self,
        deadline: Option<tokio::time::Instant>,
    ) -> Option<CallSlot> {
        let Some(slots) = &self.inner.slots else {
            return Some(CallSlot::new(None));
        };
        // The common case, a free slot, without arming a timer.
        if let Ok(permit) = slots.clone().try_acquire_owned() {
            return Some(CallSlot::new(Some(permit)));
        }
        let wait = slots.clone().acquire_owned();
        let permit = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, wait).await.ok()?,
            None => wait.await,
        };
        // The semaphore is never closed.
        permit.ok().map(|permit| CallSlot::new(Some(permit)))
    }

    /// Room for one more spare instance, if the runtime allows more
    /// ([`RuntimeConfig::spare_instances`]).
    pub(crate) fn spare_slot(&self) -> Option<SpareSlot> {
        self.inner
            .spares
            .clone()
            .try_acquire_owned()
            .ok()
            .map(|permit| SpareSlot {
                _permit: permit,
                _counted: Held::new(&metrics().instances_spare),
            })
    }

    /// Room to drop a call's store after its answer, if fewer than [`RETIRING_AT_ONCE`]
    /// calls wait for that now.
    pub(crate) fn retiring_slot(&self) -> Option<OwnedSemaphorePermit> {
        self.inner.retiring.clone().try_acquire_owned().ok()
    }

    /// A fresh store for one call in `sandbox`, its limits set (see [`new_store`]).
    pub(crate) fn new_store(
        &self,
        sandbox: &Sandbox,
        profiled: bool,
    ) -> anyhow::Result<Store<StoreState>> {
        let settings = StoreSettings {
            epoch_tick: self.inner.epoch_tick,
            file_io_on_call_thread: self.inner.file_io_on_call_thread,
        };
        new_store(&self.inner.engine, sandbox, settings, profiled)
    }
}

/// How many calls at most may leave their store to be dropped after their answer. Under a
/// steady stream of calls those drops fall behind the new calls, each still holding its
/// instance slot; new calls then take slots never used before, whose pages stay resident
/// (measured: 8,000 Python calls, two at a time, ended with 500 MB more resident). Past
/// this many, a call drops its store before it answers, as without spare instances.
const RETIRING_AT_ONCE: usize = 2;

/// An instance slot of the pool, held for the length of one call.
pub(crate) struct CallSlot {
    _permit: Option<OwnedSemaphorePermit>,
    _counted: Held,
}

impl CallSlot {
    fn new(permit: Option<OwnedSemaphorePermit>) -> Self {
        Self {
            _permit: permit,
            _counted: Held::new(&metrics().instances_in_use),
        }
    }
}

/// The room of one spare instance, held as long as the spare waits for its call.
pub(crate) struct SpareSlot {
    _permit: OwnedSemaphorePermit,
    _counted: Held,
}

/// Slots for `instances` component instances (calls and spares). Components from language
/// runtimes (Python, JavaScript) have dozens of core instances and large function tables,
/// hence the margins: [`Runtime::call_slot`] and [`Runtime::spare_slot`] share out the
/// instances, and nothing else of the pool should run out first. Core instances are only
/// counted (nothing is reserved for them); the componentize-py component has 64.
fn pooling_config(instances: u32) -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(instances)
        .total_stacks(instances)
        .total_core_instances(instances.saturating_mul(256))
        .total_memories(instances.saturating_mul(4))
        .total_tables(instances.saturating_mul(16))
        .max_memories_per_module(2)
        .table_elements(200_000)
        .max_core_instance_size(16 << 20)
        .max_component_instance_size(4 << 20);
    // Resetting an instance's memory for the next call: by default wasmtime decommits it
    // with madvise, and the next call faults every page back in (a TLB flush and a fault per
    // page: most of a small call's cost). Where the kernel can report which pages were
    // written (PAGEMAP_SCAN, Linux 6.7+), only those are restored, and pages stay resident.
    // Without it, keeping pages resident would mean a memset of the whole region per call.
    //
    // Not with swap: wasmtime 48's scan only resets written pages that are present, so a
    // written page the kernel swapped out would keep what the last call left in it, for the
    // next instance in that slot to read (wasmtime PR #14357). madvise has no such gap.
    if PoolingAllocationConfig::is_pagemap_scan_available()
        && nothing_swaps(std::fs::read_to_string("/proc/swaps").ok().as_deref())
    {
        pool.pagemap_scan(Enabled::Yes)
            .linear_memory_keep_resident(64 << 20)
            .table_keep_resident(1 << 20);
    }
    pool
}

/// Whether, by the text of `/proc/swaps`, the kernel cannot swap this process's memory out:
/// the list has no area under its header line. A list that could not be read (`None`) counts
/// as swap, the safe side.
fn nothing_swaps(swaps: Option<&str>) -> bool {
    swaps.is_some_and(|swaps| swaps.lines().skip(1).all(|line| line.trim().is_empty()))
}

/// Advances the engine's epoch, and `clock` to the milliseconds since the start, every
/// `tick` on a thread of its own, until `stop` is set.
fn start_ticker(
    engine: Engine,
    tick: Duration,
    stop: Arc<AtomicBool>,
    clock: CoarseClock,
) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    std::thread::Builder::new()
        .name("toolhost-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                engine.increment_epoch();
                clock.advance_to(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
            }
        })
        .context("cannot start the epoch thread")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::nothing_swaps;

    #[test]
    fn memory_is_reset_by_scan_only_when_proc_swaps_lists_no_area() {
        let header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
        assert!(nothing_swaps(Some(header)));
        assert!(nothing_swaps(Some("")));
        let file = "/swapfile                               file\t\t1048572\t\t0\t\t-2\n";
        assert!(!nothing_swaps(Some(&format!("{header}{file}"))));
        let zram = "/dev/zram0                              partition\t4194300\t\t0\t\t100\n";
        assert!(!nothing_swaps(Some(&format!("{header}{zram}"))));
        // Unreadable: assume swap.
        assert!(!nothing_swaps(None));
    }
}
