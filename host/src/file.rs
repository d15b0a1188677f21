//! Reading the files a user names (a manifest, a component): only regular files, and only up
//! to a size limit, so that a path naming `/dev/zero`, `/dev/urandom` or a FIFO is an error
//! at once instead of a read that never ends. And the caches' files: where the caches live,
//! and when a file or directory in one may be trusted (the compile cache and the store of
//! pulled components hold to the same rule).

use std::fs::{Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt as _, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The largest manifest read: 1 MiB (a manifest of a hundred components is a few KiB).
pub const MAX_MANIFEST_SIZE: u64 = 1024 * 1024;

/// The largest component file read: 512 MiB (an interpreter with its standard library, such
/// as a Python component, is some tens of MiB).
pub const MAX_COMPONENT_SIZE: u64 = 512 * 1024 * 1024;

/// Reads the regular file at `path`, at most `limit` bytes long. Anything else (a directory,
/// a device, a FIFO, a socket) and a larger file are errors saying what the path is, or how
/// large it is and the limit; `what` names the file's role (`a manifest`). Opening never
/// blocks: a FIFO is refused before it is read.
pub(crate) fn read(path: &Path, limit: u64, what: &str) -> io::Result<Vec<u8>> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let metadata = file.metadata()?;
    check(&metadata, limit, what)?;
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    // `O_NONBLOCK` does not change how a regular file is read. The file may grow while it
    // is read: never read more than the limit.
    let read = file.take(limit + 1).read_to_end(&mut bytes)?;
    if read as u64 > limit {
        return Err(too_large(limit, what));
    }
    Ok(bytes)
}

/// The metadata of the regular file at `path` (symbolic links followed), or the error [`read`]
/// would give for it.
pub(crate) fn metadata(path: &Path, limit: u64, what: &str) -> io::Result<Metadata> {
    let metadata = std::fs::metadata(path)?;
    check(&metadata, limit, what)?;
    Ok(metadata)
}

fn check(metadata: &Metadata, limit: u64, what: &str) -> io::Result<()> {
    let kind = metadata.file_type();
    let not_a_file = if kind.is_dir() {
        Some("a directory")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if kind.is_socket() {
        Some("a socket")
    } else if !kind.is_file() {
        Some("not a regular file")
    } else {
        None
    };
    if let Some(kind) = not_a_file {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {kind}, and {what} is read only from a regular file"),
        ));
    }
    if metadata.len() > limit {
        return Err(too_large(limit, what));
    }
    Ok(())
}

fn too_large(limit: u64, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "it is larger than {} MiB, the most read for {what}",
            limit / (1024 * 1024)
        ),
    )
}

/// `$TOOLHOST_CACHE`, else `$XDG_CACHE_HOME/toolhost`, else `~/.cache/toolhost`: where the
/// compile cache and the pulled components live.
pub(crate) fn cache_root() -> Option<PathBuf> {
    let env_dir = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env_dir("TOOLHOST_CACHE")
        .or_else(|| env_dir("XDG_CACHE_HOME").map(|d| d.join("toolhost")))
        .or_else(|| env_dir("HOME").map(|d| d.join(".cache").join("toolhost")))
}

/// Why what is at `path` may not be trusted (a symbolic link, owned by another user, writable
/// by group or others), with the fix; `None` when it may. Pulled components are held to the
/// same rule as compiled code (`crate::oci::store`).
pub(crate) fn untrusted(path: &Path, is_dir: bool) -> Option<String> {
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(e) => return Some(format!("it cannot be examined ({e})")),
    };
    let what = if is_dir { "directory" } else { "file" };
    if metadata.file_type().is_symlink() {
        Some(format!(
            "the {what} is a symbolic link; point --cache-dir (or TOOLHOST_CACHE) at a real directory"
        ))
    } else if metadata.uid() != current_uid() {
        Some(format!(
            "the {what} is owned by user {} and this process runs as user {}; use a cache \
             directory of your own (--cache-dir or TOOLHOST_CACHE), or delete this one",
            metadata.uid(),
            current_uid()
        ))
    } else if metadata.mode() & 0o022 != 0 {
        Some(format!(
            "group or others can write the {what} (mode {:o}); run `chmod go-w {}` or delete it",
            metadata.mode() & 0o777,
            path.display()
        ))
    } else {
        None
    }
}

fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    #[allow(unsafe_code)]
    unsafe {
        libc::geteuid()
    }
}

/// Whether `bytes` start as a WebAssembly component does; what they are instead if not.
pub(crate) fn check_component_header(bytes: &[u8]) -> Result<(), String> {
    let problem = match bytes.get(..8) {
        Some([0, b'a', b's', b'm', 0x0d, 0, 1, 0]) => return Ok(()),
        Some([0, b'a', b's', b'm', 1, 0, 0, 0]) => {
            "it is a core WebAssembly module, not a component; build it for `wasm32-wasip2`, or \
             wrap it with `wasm-tools component new` (and the WASI preview1 adapter)"
        }
        Some([0, b'a', b's', b'm', ..]) => "it is a WebAssembly binary of an unknown version",
        _ => "it is not a WebAssembly file",
    };
    Err(problem.to_owned())
}

/// Writes `bytes` to `path` as only this user may read it: the directory made `0700` if it
/// is missing, then a `0600` temporary file beside `path`, synced and renamed into place, so
/// no reader ever sees a partial file. For the caches (compiled code, pulled components,
/// logins).
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut file = tempfile::Builder::new()
        .prefix(".tmp-")
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.as_file().sync_data()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_directories_are_refused_at_once() {
        for (path, kind) in [
            ("/dev/zero", "a character device"),
            ("/dev/urandom", "a character device"),
            ("/", "a directory"),
        ] {
            let error = read(Path::new(path), 1024, "a manifest").unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{path}");
            assert!(error.to_string().contains(kind), "{path}: {error}");
        }
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let error = read(&fifo, 1024, "a manifest").unwrap_err();
        assert!(error.to_string().contains("a FIFO"), "{error}");
        assert!(metadata(&fifo, 1024, "a component").is_err());
    }

    #[test]
    fn a_file_over_the_limit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, vec![b'#'; 3 * 1024 * 1024]).unwrap();
        let error = read(&path, 2 * 1024 * 1024, "a manifest").unwrap_err();
        assert_eq!(
            error.to_string(),
            "it is larger than 2 MiB, the most read for a manifest"
        );
        assert_eq!(
            read(&path, 4 * 1024 * 1024, "a manifest").unwrap().len(),
            3 << 20
        );
    }
}
