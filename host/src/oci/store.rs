//! Pulled components on disk, by digest, so a component pulled once works offline.
//!
//! Under `$TOOLHOST_CACHE/oci/` (else `~/.cache/toolhost/oci/`):
//!
//! - `blobs/sha256/<hex>`: manifests and component layers, each named by the SHA-256 of its
//!   bytes (checked before it is written, and again when a manifest is read back);
//! - `tags/<hash of the reference>.json`: the digest a tag pointed to at the last pull, so a
//!   tag reference works with the registry stopped;
//! - `signatures/<hex>.json`: the cosign signatures of a manifest, verified again at every use.
//!
//! The same trust rule as the compile cache: the directory is created `0700`, and a directory
//! or file that is a symbolic link, belongs to another user or that group or others can write
//! is refused. Files are written `0600` to a temporary name and renamed, so a reader never
//! sees half of one, and only after everything about them was checked.

use std::fs;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::file::{cache_root, untrusted};
use crate::oci::error::OciError;
use crate::oci::reference::ComponentRef;

/// A cosign signature as stored: the payload that was signed and the signature, both base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSignature {
    /// The simple-signing payload, base64.
    pub payload: String,
    /// The ECDSA signature over it, base64 (as in cosign's annotation).
    pub signature: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct TagRecord {
    reference: String,
    digest: String,
}

/// The directory of pulled components.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// `sha256:<hex>` as hex.
pub(crate) fn sha256_digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

impl Store {
    /// The store under the cache directory (`$TOOLHOST_CACHE/oci`), created when missing.
    pub fn open_default() -> Result<Self, OciError> {
        let root = cache_root().ok_or_else(|| OciError::Store {
            path: PathBuf::from("$TOOLHOST_CACHE"),
            problem: "neither TOOLHOST_CACHE, XDG_CACHE_HOME nor HOME is set: set TOOLHOST_CACHE"
                .to_owned(),
        })?;
        Self::open(root.join("oci"))
    }

    /// The store at `dir`, created `0700` when missing; refused when it cannot be trusted.
    pub fn open(dir: PathBuf) -> Result<Self, OciError> {
        if !dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(|e| OciError::Store {
                    path: dir.clone(),
                    problem: format!("it cannot be created ({e}); set TOOLHOST_CACHE elsewhere"),
                })?;
        }
        let store = Self { dir };
        store.trust(&store.dir, true)?;
        Ok(store)
    }

    /// Where the blob `digest` is (or would be).
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.dir.join("blobs").join("sha256").join(hex)
    }

    /// The blob `digest`'s path when it is stored and may be trusted.
    pub fn blob(&self, digest: &str) -> Result<Option<PathBuf>, OciError> {
        let path = self.blob_path(digest);
        if fs::symlink_metadata(&path).is_err() {
            return Ok(None);
        }
        self.trust(&path, false)?;
        Ok(Some(path))
    }

    /// A stored manifest's bytes, checked against `digest` (a file altered in the cache is an
    /// error, not a different component).
    pub fn manifest(&self, digest: &str, limit: u64) -> Result<Option<Vec<u8>>, OciError> {
        let Some(path) = self.blob(digest)? else {
            return Ok(None);
        };
        let bytes = crate::file::read(&path, limit, "a manifest").map_err(|e| self.io(&path, e))?;
        let actual = sha256_digest(&bytes);
        if actual != digest {
            return Err(OciError::Store {
                path,
                problem: format!(
                    "it holds {actual}, not {digest}: it was altered; delete it and pull again"
                ),
            });
        }
        Ok(Some(bytes))
    }

    /// Stores `bytes` as the blob they hash to, and returns its path.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<PathBuf, OciError> {
        let path = self.blob_path(&sha256_digest(bytes));
        self.write(&path, bytes)?;
        Ok(path)
    }

    /// The digest `reference`'s tag pointed to at its last pull.
    pub fn tag(&self, reference: &ComponentRef) -> Result<Option<String>, OciError> {
        let path = self.tag_path(reference);
        let Some(record) = self.read_json::<TagRecord>(&path)? else {
            return Ok(None);
        };
        Ok((record.reference == tag_key(reference)).then_some(record.digest))
    }

    /// Records that `reference`'s tag points to `digest`.
    pub fn set_tag(&self, reference: &ComponentRef, digest: &str) -> Result<(), OciError> {
        let record = TagRecord {
            reference: tag_key(reference),
            digest: digest.to_owned(),
        };
        self.write_json(&self.tag_path(reference), &record)
    }

    /// The signatures stored for the manifest `digest`.
    pub fn signatures(&self, digest: &str) -> Result<Vec<StoredSignature>, OciError> {
        Ok(self
            .read_json(&self.signatures_path(digest))?
            .unwrap_or_default())
    }

    /// Stores the signatures of the manifest `digest`.
    pub fn set_signatures(
        &self,
        digest: &str,
        signatures: &[StoredSignature],
    ) -> Result<(), OciError> {
        self.write_json(&self.signatures_path(digest), &signatures)
    }

    fn tag_path(&self, reference: &ComponentRef) -> PathBuf {
        let hash = sha256_digest(tag_key(reference).as_bytes());
        let hex = hash.trim_start_matches("sha256:");
        self.dir.join("tags").join(format!("{hex}.json"))
    }

    fn signatures_path(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.dir.join("signatures").join(format!("{hex}.json"))
    }

    fn read_json<T: for<'de> Deserialize<'de>>(&self, path: &Path) -> Result<Option<T>, OciError> {
        if fs::symlink_metadata(path).is_err() {
            return Ok(None);
        }
        self.trust(path, false)?;
        let bytes =
            crate::file::read(path, 1024 * 1024, "a cache record").map_err(|e| self.io(path, e))?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| OciError::Store {
                path: path.to_owned(),
                problem: format!("it is not a record of this version ({e}); delete it"),
            })
    }

    fn write_json(&self, path: &Path, value: &impl Serialize) -> Result<(), OciError> {
        let bytes = serde_json::to_vec_pretty(value).map_err(|e| self.io(path, e.into()))?;
        self.write(path, &bytes)
    }

    /// Writes through a `0600` temporary file in the same directory, renamed into place.
    fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), OciError> {
        let dir = path.parent().unwrap_or(&self.dir);
        crate::file::write_private(path, bytes).map_err(|e| self.io(path, e))?;
        self.trust(dir, true)
    }

    fn trust(&self, path: &Path, is_dir: bool) -> Result<(), OciError> {
        match untrusted(path, is_dir) {
            Some(problem) => Err(OciError::Store {
                path: path.to_owned(),
                problem,
            }),
            None => Ok(()),
        }
    }

    fn io(&self, path: &Path, error: std::io::Error) -> OciError {
        OciError::Store {
            path: path.to_owned(),
            problem: error.to_string(),
        }
    }
}

/// A reference without its digest: what a tag record is for.
fn tag_key(reference: &ComponentRef) -> String {
    ComponentRef {
        digest: None,
        ..reference.clone()
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

    use super::*;

    #[test]
    fn blobs_are_private_named_by_digest_and_checked_when_read() {
        let root = tempfile::tempdir().expect("temp dir");
        let store = Store::open(root.path().join("oci")).expect("opens");
        let path = store.put_blob(b"{}").expect("writes");
        let digest = sha256_digest(b"{}");
        assert_eq!(path, store.blob_path(&digest));
        let mode = fs::metadata(&path).map(|m| m.mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600);
        assert_eq!(
            store.manifest(&digest, 100).expect("reads"),
            Some(b"{}".to_vec())
        );
        fs::write(&path, b"[]").expect("alters");
        let error = store.manifest(&digest, 100).expect_err("altered");
        assert!(error.to_string().contains("it was altered"), "{error}");
    }

    #[test]
    fn a_store_others_can_write_is_refused() {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("oci");
        Store::open(dir.clone()).expect("opens");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).expect("chmod");
        let error = Store::open(dir).expect_err("refused").to_string();
        assert!(error.contains("chmod go-w"), "{error}");
    }

    #[test]
    fn tag_records_are_per_reference() {
        let root = tempfile::tempdir().expect("temp dir");
        let store = Store::open(root.path().join("oci")).expect("opens");
        let one = ComponentRef::parse("oci://127.0.0.1:5000/calc:1").expect("parses");
        let two = ComponentRef::parse("oci://127.0.0.1:5000/calc:2").expect("parses");
        store.set_tag(&one, "sha256:aa").expect("writes");
        assert_eq!(
            store.tag(&one).expect("reads").as_deref(),
            Some("sha256:aa")
        );
        assert_eq!(store.tag(&two).expect("reads"), None);
    }
}
