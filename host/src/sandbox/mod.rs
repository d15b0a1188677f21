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
mod nested;
mod output;
mod per_caller;
#[cfg(feature = "code-mode")]
pub(crate) mod program;
pub mod report;
mod resolve;
pub(crate) mod store;

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use wasmtime_wasi::FsPerms;

pub use grants::{DirGrant, EnvGrant, Grants, HostPattern};
pub use limits::{Limits, LimitsConfig};
pub use nested::{NestedError, NestedErrorKind, NestedOutcome, NestedResult};
pub use output::CapturedLog;
pub use per_caller::{MAX_NAME, directory_name};
#[cfg(feature = "code-mode")]
pub use program::{NestedCall, NestedCalls, ProgramLimits, ProgramStop};
pub use report::{CallObserver, LogLevel, Observer, Progress, ReportCounts};
pub use resolve::HOSTS_FILE_VARIABLE;

use crate::caller::Caller;
use crate::error::{CallError, LoadError};
use per_caller::CallerDir;

/// A component's grants, checked and resolved, and its limits.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    pub(super) dirs: Vec<(PathBuf, String, FsPerms)>,
    /// Directories granted per caller (`{sub}`), resolved for each call.
    caller_dirs: Vec<CallerDir>,
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
        let grant_error = |problem| LoadError::Grant {
            component: component.to_owned(),
            problem,
        };
        let mut dirs = Vec::with_capacity(grants.dirs.len());
        let mut caller_dirs = Vec::new();
        for dir in &grants.dirs {
            let perms = if dir.write {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            if let Some(per_caller) = CallerDir::from_grant(&dir.host, &dir.guest, perms) {
                caller_dirs.push(per_caller.map_err(grant_error)?);
                continue;
            }
            let host = dir.host.canonicalize().map_err(|e| {
                grant_error(format!(
                    "granted directory {} cannot be used ({e}); create it or fix the path",
                    dir.host.display()
                ))
            })?;
            if !host.is_dir() {
                return Err(grant_error(format!(
                    "granted directory {} is not a directory",
                    host.display()
                )));
            }
            dirs.push((host, dir.guest.clone(), perms));
        }
        if let Some(workdir) = &grants.workdir {
            // wasi-libc and the language runtimes on it resolve relative paths against a
            // directory opened as `.`: the same directory, with the same permissions.
            if let Some((host, _, perms)) = dirs.iter().find(|(_, guest, _)| guest == workdir) {
                dirs.push((host.clone(), ".".to_owned(), *perms));
            } else if let Some(dir) = caller_dirs.iter().find(|dir| dir.guest == *workdir) {
                caller_dirs.push(dir.seen_as("."));
            } else {
                let granted: Vec<&str> = (dirs.iter().map(|(_, guest, _)| guest.as_str()))
                    .chain(caller_dirs.iter().map(|dir| dir.guest.as_str()))
                    .collect();
                return Err(grant_error(format!(
                    "the working directory `{workdir}` is not a granted directory; grant it \
                     or set workdir to one of: {}",
                    if granted.is_empty() {
                        "(none granted)".to_owned()
                    } else {
                        granted.join(", ")
                    }
                )));
            }
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
            caller_dirs,
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
            caller_dirs: Vec::new(),
            env: Vec::new(),
            http: Arc::new([]),
            sockets: Arc::new([]),
            limits,
        }
    }
}

impl Sandbox {
    /// Whether some granted directory is one per caller (then no call's store is made ahead:
    /// it depends on the caller).
    pub(crate) fn has_caller_dirs(&self) -> bool {
        !self.caller_dirs.is_empty()
    }

    /// The sandbox of a call of `tool` by `caller`: this one, with each directory granted per
    /// caller resolved to the caller's own (made on first use). A caller whose identity cannot
    /// name a directory, or a call without a caller, is denied it.
    pub(crate) fn for_caller(
        &self,
        tool: &str,
        caller: Option<&Caller>,
    ) -> Result<Cow<'_, Sandbox>, CallError> {
        if self.caller_dirs.is_empty() {
            return Ok(Cow::Borrowed(self));
        }
        let mut sandbox = self.clone();
        for dir in &self.caller_dirs {
            let host = dir.resolve(caller).map_err(|problem| {
                tracing::warn!(tool, "{problem}");
                CallError::CapabilityDenied {
                    tool: tool.to_owned(),
                    capability: format!("its directory per caller {}", dir.guest),
                    grant: problem,
                }
            })?;
            sandbox.dirs.push((host, dir.guest.clone(), dir.perms));
        }
        Ok(Cow::Owned(sandbox))
    }
}
