//! What the host's child processes (the local model's server, MCP servers over stdio) share.

use tokio::process::Command;

/// Makes the kernel send the child SIGTERM when the host dies without stopping it (a
/// SIGKILL, a crash). Linux ties this to the thread that started the child, which for the
/// host is a runtime worker or the main thread: both live as long as the host.
#[cfg(target_os = "linux")]
pub(crate) fn die_with_parent(command: &mut Command) {
    // SAFETY: `prctl(PR_SET_PDEATHSIG)` only sets a flag of the calling (child) process and
    // is async-signal-safe, as code between fork and exec must be.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Elsewhere, a child outlives a host that dies without stopping it.
#[cfg(not(target_os = "linux"))]
pub(crate) fn die_with_parent(_: &mut Command) {}
