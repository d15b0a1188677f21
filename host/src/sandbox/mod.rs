//! The sandbox each call runs in: the grants of its component turned into a WASI context,
//! `wasi:http` hooks, a socket check, a memory limiter and captured stdio.
//!
//! Everything that can be decided once per component (checking that granted directories
//! exist, reading inherited environment variables) is done when the component is loaded, in
//! [`Sandbox::new`]; [`Sandbox::store_state`] then only assembles a fresh state per call.

mod egress;
mod grants;
mod limits;
mod output;
mod resolve;

use std::path::PathBuf;
use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

pub use grants::{DirGrant, EnvGrant, Grants, HostPattern};
pub use limits::{ByteSize, HumanDuration, Limits, LimitsConfig, format_bytes};
pub use output::CapturedLog;
pub use resolve::HOSTS_FILE_VARIABLE;

pub(crate) use egress::Denials;
pub(crate) use limits::MemoryLimiter;
pub(crate) use output::LogPipe;

use crate::LoadError;
use crate::call::WasmClock;

/// The data of every store: one call's WASI state and its bookkeeping.
pub(crate) struct StoreState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
    egress: egress::HttpEgress,
    pub(crate) limiter: MemoryLimiter,
    /// Epoch ticks of computing the call may still use.
    pub(crate) cpu_ticks_left: u64,
    pub(crate) stdout: LogPipe,
    pub(crate) stderr: LogPipe,
    pub(crate) denials: Denials,
    /// Time spent in WebAssembly, measured for profiled calls only.
    pub(crate) wasm_clock: WasmClock,
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

/// A component's grants, checked and resolved, and its limits.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    dirs: Vec<(PathBuf, String, FsPerms)>,
    env: Vec<(String, String)>,
    http: Arc<[HostPattern]>,
    sockets: Arc<[HostPattern]>,
    pub(crate) limits: Limits,
}

impl Sandbox {
    /// Checks `grants` for the component called `component`: granted directories must exist.
    /// Inherited environment variables are read now; one that is not set is reported in the
    /// log and not passed.
    pub(crate) fn new(component: &str, grants: &Grants, limits: Limits) -> Result<Self, LoadError> {
        let mut dirs = Vec::with_capacity(grants.dirs.len());
        for dir in &grants.dirs {
            let host = dir.host.canonicalize().map_err(|e| LoadError::Grant {
                component: component.to_owned(),
                problem: format!(
                    "granted directory {} cannot be used ({e}); create it or fix the path",
                    dir.host.display()
                ),
            })?;
            if !host.is_dir() {
                return Err(LoadError::Grant {
                    component: component.to_owned(),
                    problem: format!("granted directory {} is not a directory", host.display()),
                });
            }
            let perms = if dir.write {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            dirs.push((host, dir.guest.clone(), perms));
        }
        if let Some(workdir) = &grants.workdir {
            // wasi-libc and the language runtimes on it resolve relative paths against a
            // directory opened as `.`: the same directory, with the same permissions.
            let Some((host, _, perms)) = dirs.iter().find(|(_, guest, _)| guest == workdir) else {
                let granted: Vec<&str> = dirs.iter().map(|(_, guest, _)| guest.as_str()).collect();
                return Err(LoadError::Grant {
                    component: component.to_owned(),
                    problem: format!(
                        "the working directory `{workdir}` is not a granted directory; grant it \
                         or set workdir to one of: {}",
                        if granted.is_empty() {
                            "(none granted)".to_owned()
                        } else {
                            granted.join(", ")
                        }
                    ),
                });
            };
            dirs.push((host.clone(), ".".to_owned(), *perms));
        }
        let mut env = Vec::with_capacity(grants.env.len());
        for grant in &grants.env {
            match grant {
                EnvGrant::Set(name, value) => env.push((name.clone(), value.clone())),
                EnvGrant::Inherit(name) => match std::env::var(name) {
                    Ok(value) => env.push((name.clone(), value)),
                    Err(_) => tracing::warn!(
                        component,
                        variable = %name,
                        "granted environment variable is not set on the host; the tool will not see it"
                    ),
                },
            }
        }
        Ok(Self {
            dirs,
            env,
            http: grants.http.clone().into(),
            sockets: grants.sockets.clone().into(),
            limits,
        })
    }

    /// A sandbox that grants nothing, as `describe` runs in.
    pub(crate) fn empty(limits: Limits) -> Self {
        Self {
            dirs: Vec::new(),
            env: Vec::new(),
            http: Arc::new([]),
            sockets: Arc::new([]),
            limits,
        }
    }

    /// A fresh state for one call: `cpu_ticks` of computing, and file operations on the call's
    /// thread or handed to a thread pool.
    pub(crate) fn store_state(
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
                .socket_addr_check(egress::socket_check(self.sockets.clone(), denials.clone()));
        } else {
            wasi.allow_tcp(false)
                .allow_udp(false)
                .allow_ip_name_lookup(false);
        }

        Ok(StoreState {
            wasi: wasi.build(),
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            egress: egress::HttpEgress::new(self.http.clone(), denials.clone()),
            limiter: MemoryLimiter::new(self.limits.memory),
            cpu_ticks_left: cpu_ticks,
            stdout,
            stderr,
            denials,
            wasm_clock: WasmClock::default(),
        })
    }
}
