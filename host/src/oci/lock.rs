//! `toolhost.lock`: the manifest digest each OCI reference of a manifest resolved to when
//! `host lock` ran. With it beside the manifest, a tag that points elsewhere is an error naming
//! both digests, never a silent upgrade.
//!
//! ```toml
//! version = 1
//!
//! [pins]
//! "oci://registry.example.com/tools/calculator:1" = "sha256:3f1c..."
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::oci::error::OciError;
use crate::oci::reference::{ComponentRef, check_digest};

/// The lock file's name, beside the manifest.
pub const LOCK_FILE: &str = "toolhost.lock";

const HEADER: &str = "# Written by `host lock`: the digest each OCI component reference of the \
manifest\n# resolved to. While this file is here, a tag that points elsewhere is an error. \
Commit it.\n";

/// The pins of a lock file, by reference as the manifest writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    version: u32,
    #[serde(default)]
    pins: BTreeMap<String, String>,
}

impl Lock {
    /// An empty lock of the current version.
    pub fn new() -> Self {
        Self {
            version: 1,
            pins: BTreeMap::new(),
        }
    }

    /// The lock file of the manifest at `manifest`.
    pub fn path_beside(manifest: &Path) -> PathBuf {
        match manifest.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.join(LOCK_FILE),
            _ => PathBuf::from(LOCK_FILE),
        }
    }

    /// Reads the lock file at `path`; `None` when there is none.
    pub fn read(path: &Path) -> Result<Option<Self>, OciError> {
        let invalid = |problem: String| OciError::File {
            path: path.to_owned(),
            problem,
        };
        let bytes = match crate::file::read(path, 1024 * 1024, "a lock file") {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(invalid(e.to_string())),
        };
        let text = String::from_utf8(bytes).map_err(|e| invalid(e.to_string()))?;
        let lock: Lock = toml::from_str(&text).map_err(|e| {
            invalid(format!(
                "it is not a lock file ({e}); write it again with `host lock`"
            ))
        })?;
        if lock.version != 1 {
            return Err(invalid(format!(
                "version {} is not one this host reads (1); write it again with `host lock`",
                lock.version
            )));
        }
        for digest in lock.pins.values() {
            check_digest(digest).map_err(invalid)?;
        }
        Ok(Some(lock))
    }

    /// The digest `reference` is pinned to.
    pub fn pin(&self, reference: &ComponentRef) -> Option<&str> {
        self.pins.get(&reference.to_string()).map(String::as_str)
    }

    /// Pins `reference` (as written, without a digest) to `digest`.
    pub fn set(&mut self, reference: &ComponentRef, digest: &str) {
        self.pins.insert(reference.to_string(), digest.to_owned());
    }

    /// How many references are pinned.
    pub fn len(&self) -> usize {
        self.pins.len()
    }

    /// Whether nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.pins.is_empty()
    }

    /// Writes the lock to `path` (through a temporary file, renamed into place).
    pub fn write(&self, path: &Path) -> Result<(), OciError> {
        let text = toml::to_string(self).map_err(|e| OciError::File {
            path: path.to_owned(),
            problem: e.to_string(),
        })?;
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let written = (|| {
            // Read by everyone who checks the manifest out, like the manifest itself.
            let mut file = tempfile::Builder::new()
                .prefix(".toolhost.lock-")
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644))
                .tempfile_in(dir)?;
            std::io::Write::write_all(&mut file, format!("{HEADER}{text}").as_bytes())?;
            file.persist(path).map_err(|e| e.error)?;
            Ok::<_, std::io::Error>(())
        })();
        written.map_err(|e| OciError::File {
            path: path.to_owned(),
            problem: format!("cannot write it ({e})"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_lock_reads_back() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(LOCK_FILE);
        let reference = ComponentRef::parse("oci://127.0.0.1:5000/calc:1").expect("parses");
        let mut lock = Lock::new();
        lock.set(&reference, &format!("sha256:{}", "a".repeat(64)));
        lock.write(&path).expect("writes");
        let read = Lock::read(&path).expect("reads").expect("is there");
        assert_eq!(read, lock);
        assert_eq!(
            read.pin(&reference),
            Some(format!("sha256:{}", "a".repeat(64)).as_str())
        );
        assert_eq!(Lock::read(&dir.path().join("none")).expect("no file"), None);
    }
}
