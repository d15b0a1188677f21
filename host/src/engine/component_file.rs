//! Where a component's bytes come from: its file, or for an `oci://` reference the copy
//! pulled into the store (checked against the digest it was pulled by); and their content key.

use std::path::{Path, PathBuf};

use crate::engine::cache;
use crate::engine::cache::ContentKey;
use crate::engine::runtime::Runtime;
use crate::error::LoadError;
#[cfg(feature = "oci")]
use crate::oci;

/// What was pulled for a component from a registry.
#[cfg(feature = "oci")]
pub(super) type Pulled = oci::Pulled;

/// Without the `oci` feature nothing is ever pulled.
#[cfg(not(feature = "oci"))]
pub(super) enum Pulled {}

/// Whether `path` names a component in an OCI registry, whether or not this build can pull it.
pub(super) fn is_oci(path: &Path) -> bool {
    path.to_str().is_some_and(|text| text.starts_with("oci://"))
}

/// The file to load: `path`, or for an `oci://` reference the copy pulled (or found)
/// in the store, with what was pulled.
#[cfg(feature = "oci")]
pub(super) async fn component_file(
    name: &str,
    path: &Path,
    policy: &oci::PullPolicy,
) -> Result<(PathBuf, Option<oci::Pulled>), LoadError> {
    let Some(reference) = path.to_str().filter(|text| oci::is_oci(text)) else {
        return Ok((path.to_owned(), None));
    };
    let pulled = oci::fetch(reference, policy)
        .await
        .map_err(|source| LoadError::Pull {
            component: name.to_owned(),
            source: Box::new(source),
        })?;
    Ok((pulled.path.clone(), Some(pulled)))
}

/// The file to load: `path`. This build has no `oci` feature: an `oci://` reference is an
/// error that says so (not a file that cannot be read).
#[cfg(not(feature = "oci"))]
pub(super) async fn component_file(
    name: &str,
    path: &Path,
) -> Result<(PathBuf, Option<Pulled>), LoadError> {
    if is_oci(path) {
        return Err(LoadError::FeatureOff {
            what: format!("component `{name}` ({})", path.display()),
            feature: "oci",
        });
    }
    Ok((path.to_owned(), None))
}

/// The content key of the component at `path` (and its bytes when they had to be read); for
/// a pulled component, checked against the digest it was pulled by, so a copy altered in the
/// store is refused.
pub(super) async fn content_key_of(
    runtime: &Runtime,
    path: &Path,
    pulled: Option<&Pulled>,
) -> Result<(ContentKey, Option<Vec<u8>>), LoadError> {
    let (key, bytes) = {
        let runtime = runtime.clone();
        let file = path.to_owned();
        blocking(move || match runtime.cache() {
            Some(cache) => cache.key_of(&file),
            None => crate::file::read(&file, crate::file::MAX_COMPONENT_SIZE, "a component")
                .map(|bytes| (cache::content_key(&bytes), Some(bytes))),
        })
        .await
        .map_err(|source| LoadError::Read {
            path: path.to_owned(),
            source,
        })?
    };
    if let Some(pulled) = pulled {
        check_pulled(path, &key, pulled)?;
    }
    Ok((key, bytes))
}

/// A pulled copy must hash to the digest it was pulled by.
#[cfg(feature = "oci")]
fn check_pulled(path: &Path, key: &ContentKey, pulled: &Pulled) -> Result<(), LoadError> {
    if pulled.layer_digest == format!("sha256:{}", key.sha256) {
        return Ok(());
    }
    Err(LoadError::UnsafeCache {
        path: path.to_owned(),
        problem: format!(
            "the copy of {} hashes to sha256:{}, not {}: it was altered; delete it and pull \
             again",
            pulled.reference, key.sha256, pulled.layer_digest
        ),
    })
}

#[cfg(not(feature = "oci"))]
fn check_pulled(_: &Path, _: &ContentKey, pulled: &Pulled) -> Result<(), LoadError> {
    match *pulled {}
}

/// Runs file work off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(std::io::Error::other)?
}
