//! The on-disk cache of compiled components, so a component is compiled once, not at every
//! start.
//!
//! Entries are keyed by the SHA-256 of the component's bytes and by the engine's
//! compatibility hash (wasmtime version and every setting that changes the machine code), so
//! a rebuilt component or an upgraded host never loads a stale entry. An entry that fails to
//! load anyway (truncated, or from an incompatible build) is compiled again and replaced.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Where a loaded component came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "source")]
pub enum CompileSource {
    /// Loaded from the compile cache, without compiling.
    Cache,
    /// Compiled now (and stored in the cache when there is one).
    Compiled {
        /// How long compiling took.
        #[serde(serialize_with = "serialize_millis")]
        took: Duration,
    },
}

fn serialize_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// The cache directory: `$TOOLHOST_CACHE/components`, else
/// `$XDG_CACHE_HOME/toolhost/components`, else `~/.cache/toolhost/components`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let env_dir = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let root = env_dir("TOOLHOST_CACHE")
        .or_else(|| env_dir("XDG_CACHE_HOME").map(|d| d.join("toolhost")))
        .or_else(|| env_dir("HOME").map(|d| d.join(".cache").join("toolhost")))?;
    Some(root.join("components"))
}

/// A directory of compiled components.
#[derive(Debug, Clone)]
pub(crate) struct CompileCache {
    dir: PathBuf,
    engine_key: String,
}

impl CompileCache {
    pub(crate) fn new(dir: PathBuf, engine: &Engine) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Self {
            dir,
            engine_key: format!("{:016x}", hasher.finish()),
        }
    }

    fn entry(&self, bytes: &[u8]) -> PathBuf {
        let digest = Sha256::digest(bytes);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{hex}-{}.cwasm", self.engine_key))
    }

    /// The compiled form of `bytes`, from the cache when it is there, else compiled (telling
    /// `observer`, so a caller can show progress) and stored.
    pub(crate) fn load_or_compile(
        &self,
        engine: &Engine,
        path: &Path,
        bytes: &[u8],
        observer: &dyn Fn(CompileEvent<'_>),
    ) -> anyhow::Result<(Component, CompileSource)> {
        let entry = self.entry(bytes);
        if entry.exists() {
            // SAFETY: the cache directory belongs to this user and holds only files this code
            // wrote from `Component::serialize`, under a name that includes the hash of the
            // source bytes and of the engine configuration. `deserialize_file` checks the
            // header and engine compatibility again.
            #[allow(unsafe_code)]
            match unsafe { Component::deserialize_file(engine, &entry) } {
                Ok(component) => return Ok((component, CompileSource::Cache)),
                Err(error) => tracing::warn!(
                    entry = %entry.display(),
                    "compile cache entry unusable, compiling again: {error:#}"
                ),
            }
        }
        let (component, took) = compile(engine, path, bytes, observer)?;
        if let Err(error) = self.store(&entry, &component) {
            tracing::warn!(
                dir = %self.dir.display(),
                "cannot write the compile cache; the next start compiles again: {error:#}"
            );
        }
        Ok((component, CompileSource::Compiled { took }))
    }

    fn store(&self, entry: &Path, component: &Component) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let serialized = component.serialize()?;
        // Written under a temporary name first, so a concurrent start never reads half a file.
        let temporary = entry.with_extension(format!("{}.tmp", std::process::id()));
        std::fs::write(&temporary, serialized)?;
        std::fs::rename(&temporary, entry)?;
        Ok(())
    }
}

/// Compiling a component, as reported to a [`CompileObserver`](crate::CompileObserver).
#[derive(Debug, Clone, Copy)]
pub enum CompileEvent<'a> {
    /// Compiling `path` (`size` bytes) starts: it was not in the cache.
    Started {
        /// The component file.
        path: &'a Path,
        /// Its size in bytes.
        size: u64,
    },
    /// Compiling `path` is over, successfully or not.
    Finished {
        /// The component file.
        path: &'a Path,
        /// How long it took.
        took: Duration,
    },
}

/// Compiles `bytes` without a cache.
pub(crate) fn compile(
    engine: &Engine,
    path: &Path,
    bytes: &[u8],
    observer: &dyn Fn(CompileEvent<'_>),
) -> anyhow::Result<(Component, Duration)> {
    observer(CompileEvent::Started {
        path,
        size: bytes.len() as u64,
    });
    let started = Instant::now();
    let component = Component::new(engine, bytes);
    let took = started.elapsed();
    observer(CompileEvent::Finished { path, took });
    tracing::info!(component = %path.display(), ?took, "compiled");
    Ok((component?, took))
}
