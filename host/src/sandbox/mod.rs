//! The sandbox each call runs in: the grants of its component turned into a WASI context,
//! `wasi:http` hooks, a socket check, captured stdio, and the limits of every call: memory
//! (a limiter), CPU time (epoch ticks), wall-clock time (a deadline), result and log sizes.
//!
//! Everything that can be decided once per component (checking that granted directories
//! exist, reading inherited environment variables) is done when the component is loaded, in
//! [`Sandbox::new`]; a call's store ([`store::new_store`]) then only assembles a fresh state.

mod egress;
mod grants;
pub(crate) mod limits;
mod output;
pub mod report;
mod resolve;
pub(crate) mod store;

use std::path::PathBuf;
use std::sync::Arc;

use wasmtime_wasi::FsPerms;

pub use grants::{DirGrant, EnvGrant, Grants, HostPattern};
pub use limits::{Limits, LimitsConfig};
pub use output::CapturedLog;
pub use report::{CallObserver, LogLevel, Observer, Progress, ReportCounts};
pub use resolve::HOSTS_FILE_VARIABLE;

use crate::error::LoadError;

/// A component's grants, checked and resolved, and its limits.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    pub(super) dirs: Vec<(PathBuf, String, FsPerms)>,
    pub(super) env: Vec<(String, String)>,
    pub(super) http: Arc<[HostPattern]>,
    pub(super) sockets: Arc<[HostPattern]>,
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
}
