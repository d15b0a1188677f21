//! The on-disk cache of compiled components, so a component is compiled once, not at every
//! start; and next to each compiled component, what its `describe` returned, so listing the
//! tools of a cached component needs neither its code nor an instance.
//!
//! Entries are keyed by the SHA-256 of the component's bytes and by the engine's
//! compatibility hash (wasmtime version and every setting that changes the machine code), so
//! a rebuilt component or an upgraded host never loads a stale entry. An entry that fails to
//! load anyway (truncated, or from an incompatible build) is compiled again and replaced.
//!
//! Compiled code is native code: it is loaded only from a directory that this user owns and
//! that nobody else can write, from files that this user owns and nobody else can write. The
//! directory is created `0700`; entries are written to a temporary file and renamed into
//! place, so a reader never sees half an entry.
//!
//! Hashing a large component (a Python one is 18 MB) costs milliseconds, so a small index
//! remembers each component file's hash with its size, modification and change times and
//! inode; a file that has not changed is not read again.

use std::fs;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use opentelemetry::KeyValue;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::engine::bindings::{Contract, wit};
use crate::error::LoadError;
use crate::offers::Offers;
use crate::telemetry::metrics::{key, metrics};

/// Where a loaded component's tools came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "source")]
pub enum CompileSource {
    /// The compile cache had it: nothing was compiled.
    Cache,
    /// It was compiled now (and stored in the cache when there is one).
    Compiled {
        /// How long compiling took.
        #[serde(rename = "took_ms", serialize_with = "crate::units::serialize_millis")]
        took: Duration,
    },
}

/// The cache directory: `$TOOLHOST_CACHE/components`, else
/// `$XDG_CACHE_HOME/toolhost/components`, else `~/.cache/toolhost/components`.
pub fn default_cache_dir() -> Option<PathBuf> {
    Some(crate::file::cache_root()?.join("components"))
}

/// Compiling a component, as reported to a [`CompileObserver`](crate::engine::runtime::CompileObserver).
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

/// What `describe` returned for a component, and what it imports: enough to list its tools
/// without loading its code.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Described {
    pub(crate) tools: Vec<WitSpec>,
    pub(crate) imports: Vec<String>,
    /// The contract version it targets (0.1.0 in what hosts before 0.2 stored).
    #[serde(default = "first_contract")]
    pub(crate) contract: Contract,
    /// Its resources, templates and prompts (0.2's optional exports).
    #[serde(default)]
    pub(crate) offers: Offers,
}

fn first_contract() -> Contract {
    Contract::V0_1
}

/// A `wit::ToolSpec` as stored in the cache.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WitSpec {
    name: String,
    description: String,
    input_schema: String,
    output_schema: Option<String>,
    capabilities: Vec<(String, String, String)>,
    #[serde(default)]
    title: Option<String>,
    /// Read-only, destructive, idempotent, open-world.
    #[serde(default)]
    annotations: [Option<bool>; 4],
}

impl From<&wit::ToolSpec> for WitSpec {
    fn from(spec: &wit::ToolSpec) -> Self {
        Self {
            name: spec.name.clone(),
            description: spec.description.clone(),
            input_schema: spec.input_schema.clone(),
            output_schema: spec.output_schema.clone(),
            title: spec.title.clone(),
            annotations: [
                spec.annotations.read_only,
                spec.annotations.destructive,
                spec.annotations.idempotent,
                spec.annotations.open_world,
            ],
            capabilities: spec
                .capabilities
                .iter()
                .map(|request| {
                    let (kind, value) = match &request.capability {
                        wit::Capability::Http(v) => ("http", v),
                        wit::Capability::Env(v) => ("env", v),
                        wit::Capability::ReadDir(v) => ("read-dir", v),
                        wit::Capability::WriteDir(v) => ("write-dir", v),
                        wit::Capability::Socket(v) => ("socket", v),
                    };
                    (kind.to_owned(), value.clone(), request.reason.clone())
                })
                .collect(),
        }
    }
}

impl TryFrom<WitSpec> for wit::ToolSpec {
    type Error = String;

    fn try_from(spec: WitSpec) -> Result<Self, String> {
        let capabilities = spec
            .capabilities
            .into_iter()
            .map(|(kind, value, reason)| {
                let capability = match kind.as_str() {
                    "http" => wit::Capability::Http(value),
                    "env" => wit::Capability::Env(value),
                    "read-dir" => wit::Capability::ReadDir(value),
                    "write-dir" => wit::Capability::WriteDir(value),
                    "socket" => wit::Capability::Socket(value),
                    other => return Err(format!("unknown capability kind `{other}`")),
                };
                Ok(wit::CapabilityRequest { capability, reason })
            })
            .collect::<Result<_, _>>()?;
        let [read_only, destructive, idempotent, open_world] = spec.annotations;
        Ok(wit::ToolSpec {
            name: spec.name,
            title: spec.title,
            description: spec.description,
            input_schema: spec.input_schema,
            output_schema: spec.output_schema,
            annotations: wit::Annotations {
                read_only,
                destructive,
                idempotent,
                open_world,
            },
            capabilities,
        })
    }
}

/// The identity of a component file's contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContentKey {
    /// SHA-256 of the bytes, hex.
    pub(crate) sha256: String,
    /// The file's size.
    pub(crate) size: u64,
}

/// Hashes `bytes`.
pub(crate) fn content_key(bytes: &[u8]) -> ContentKey {
    let digest = Sha256::digest(bytes);
    ContentKey {
        sha256: digest.iter().map(|b| format!("{b:02x}")).collect(),
        size: bytes.len() as u64,
    }
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

    /// Creates the directory (`0700`) when it does not exist, and checks that it can be
    /// trusted: owned by this user, writable by nobody else.
    pub(crate) fn open(&self) -> Result<(), LoadError> {
        if !self.dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(|e| LoadError::UnsafeCache {
                    path: self.dir.clone(),
                    problem: format!("it cannot be created ({e}); choose another --cache-dir"),
                })?;
        }
        trust(&self.dir, true)
    }

    fn entry(&self, key: &ContentKey, extension: &str) -> PathBuf {
        self.dir
            .join(format!("{}-{}.{extension}", key.sha256, self.engine_key))
    }

    /// The key of the component at `path`: from the index when the file has not changed since
    /// it was hashed, else by reading it (and the bytes are returned too).
    pub(crate) fn key_of(&self, path: &Path) -> std::io::Result<(ContentKey, Option<Vec<u8>>)> {
        let metadata = crate::file::metadata(path, crate::file::MAX_COMPONENT_SIZE, "a component")?;
        // The change time too: unlike the modification time, no one can set it back.
        let stamp = format!(
            "{} {} {} {} {} {}",
            metadata.len(),
            metadata.mtime(),
            metadata.mtime_nsec(),
            metadata.ctime(),
            metadata.ctime_nsec(),
            metadata.ino()
        );
        let index = self.index_entry(path);
        if let Ok(text) = fs::read_to_string(&index)
            && let Some((recorded, sha256)) = text.trim().rsplit_once(' ')
            && recorded == stamp
            && sha256.len() == 64
        {
            let key = ContentKey {
                sha256: sha256.to_owned(),
                size: metadata.len(),
            };
            return Ok((key, None));
        }
        let bytes = crate::file::read(path, crate::file::MAX_COMPONENT_SIZE, "a component")?;
        let key = content_key(&bytes);
        if let Err(error) =
            self.write_atomically(&index, format!("{stamp} {}", key.sha256).as_bytes())
        {
            tracing::debug!(index = %index.display(), "cannot update the cache index: {error}");
        }
        Ok((key, Some(bytes)))
    }

    fn index_entry(&self, path: &Path) -> PathBuf {
        let absolute = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        let digest = Sha256::digest(absolute.as_os_str().as_encoded_bytes());
        let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join("index").join(name)
    }

    /// What `describe` returned for the component with `key`, when cached.
    pub(crate) fn described(&self, key: &ContentKey) -> Option<Described> {
        let entry = self.entry(key, "tools.json");
        let text = fs::read(&entry).ok()?;
        match serde_json::from_slice(&text) {
            Ok(described) => Some(described),
            Err(error) => {
                tracing::warn!(entry = %entry.display(), "unreadable cache entry, describing again: {error}");
                None
            }
        }
    }

    /// Stores what `describe` returned.
    pub(crate) fn store_described(&self, key: &ContentKey, described: &Described) {
        let entry = self.entry(key, "tools.json");
        let result = serde_json::to_vec(described)
            .map_err(std::io::Error::other)
            .and_then(|bytes| self.write_atomically(&entry, &bytes));
        if let Err(error) = result {
            tracing::warn!(dir = %self.dir.display(), "cannot write the compile cache: {error}");
        }
    }

    /// The compiled form of the component with `key`, from the cache when it is there, else
    /// compiled from `bytes` (read from `path` when not given), telling `observer`, and stored.
    pub(crate) fn load_or_compile(
        &self,
        engine: &Engine,
        path: &Path,
        key: &ContentKey,
        bytes: Option<Vec<u8>>,
        observer: &dyn Fn(CompileEvent<'_>),
    ) -> Result<(Component, CompileSource), LoadError> {
        let entry = self.entry(key, "cwasm");
        if entry.exists() {
            trust(&entry, false)?;
            // SAFETY: `deserialize_file` runs native code from the file. The file was checked
            // just now: it is in a directory this user owns and nobody else can write, it is
            // owned by this user and nobody else can write it, and only this code writes such
            // files (from `Component::serialize`), under a name that includes the hash of the
            // source bytes and of the engine configuration. Wasmtime checks the header and
            // engine compatibility again.
            #[allow(unsafe_code)]
            match unsafe { Component::deserialize_file(engine, &entry) } {
                Ok(component) => {
                    metrics()
                        .component_loads
                        .add(1, &[KeyValue::new(key::COMPILE_SOURCE, "cache")]);
                    return Ok((component, CompileSource::Cache));
                }
                Err(error) => tracing::warn!(
                    entry = %entry.display(),
                    "compile cache entry unusable, compiling again: {error:#}"
                ),
            }
        }
        let bytes = match bytes {
            Some(bytes) => bytes,
            None => crate::file::read(path, crate::file::MAX_COMPONENT_SIZE, "a component")
                .map_err(|source| LoadError::Read {
                    path: path.to_owned(),
                    source,
                })?,
        };
        let (component, took) = compile(engine, path, &bytes, observer)?;
        metrics()
            .component_loads
            .add(1, &[KeyValue::new(key::COMPILE_SOURCE, "compiled")]);
        let stored = component
            .serialize()
            .map_err(std::io::Error::other)
            .and_then(|serialized| self.write_atomically(&entry, &serialized));
        if let Err(error) = stored {
            tracing::warn!(
                dir = %self.dir.display(),
                "cannot write the compile cache; the next start compiles again: {error:#}"
            );
        }
        Ok((component, CompileSource::Compiled { took }))
    }

    /// Writes `bytes` to `path` through a temporary file in the same directory, renamed into
    /// place, so no reader ever sees a partial file. The file is `0600`.
    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        crate::file::write_private(path, bytes)
    }
}

/// Checks that compiled code may be loaded from `path`: owned by this user, and neither group
/// nor others may write it.
fn trust(path: &Path, is_dir: bool) -> Result<(), LoadError> {
    match crate::file::untrusted(path, is_dir) {
        Some(problem) => Err(LoadError::UnsafeCache {
            path: path.to_owned(),
            problem,
        }),
        None => Ok(()),
    }
}

/// Compiles `bytes`, telling `observer`.
pub(crate) fn compile(
    engine: &Engine,
    path: &Path,
    bytes: &[u8],
    observer: &dyn Fn(CompileEvent<'_>),
) -> Result<(Component, Duration), LoadError> {
    check_header(path, bytes)?;
    observer(CompileEvent::Started {
        path,
        size: bytes.len() as u64,
    });
    let started = Instant::now();
    let component = Component::new(engine, bytes);
    let took = started.elapsed();
    observer(CompileEvent::Finished { path, took });
    tracing::info!(component = %path.display(), ?took, "compiled");
    let component = component.map_err(|source| LoadError::Compile {
        path: path.to_owned(),
        source: source.into(),
    })?;
    Ok((component, took))
}

/// A readable error for files that are not components at all.
fn check_header(path: &Path, bytes: &[u8]) -> Result<(), LoadError> {
    crate::file::check_component_header(bytes).map_err(|problem| LoadError::NotAComponent {
        path: path.to_owned(),
        problem,
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn cache(dir: &Path) -> CompileCache {
        let engine = Engine::default();
        CompileCache::new(dir.join("components"), &engine)
    }

    #[test]
    fn the_directory_is_created_private() {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let cache = cache(root.path());
        cache.open().unwrap_or_else(|e| panic!("{e}"));
        let mode = fs::metadata(&cache.dir)
            .map(|m| m.mode() & 0o777)
            .unwrap_or(0);
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn a_directory_others_can_write_is_refused_with_the_fix() {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let cache = cache(root.path());
        cache.open().unwrap_or_else(|e| panic!("{e}"));
        fs::set_permissions(&cache.dir, fs::Permissions::from_mode(0o777))
            .unwrap_or_else(|e| panic!("{e}"));
        let error = cache.open().expect_err("a world-writable cache is refused");
        let text = error.to_string();
        assert!(text.contains("chmod go-w"), "{text}");
        assert!(text.contains(&cache.dir.display().to_string()), "{text}");
    }

    #[test]
    fn writes_are_atomic_and_private() {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let cache = cache(root.path());
        cache.open().unwrap_or_else(|e| panic!("{e}"));
        let entry = cache.dir.join("x.cwasm");
        cache
            .write_atomically(&entry, b"first")
            .unwrap_or_else(|e| panic!("{e}"));
        cache
            .write_atomically(&entry, b"second")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fs::read(&entry).unwrap_or_default(), b"second");
        let mode = fs::metadata(&entry).map(|m| m.mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600);
        let names: Vec<String> = fs::read_dir(&cache.dir)
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["x.cwasm"], "no temporary file is left behind");
    }

    #[test]
    fn the_index_remembers_unchanged_files_and_notices_changes() {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let cache = cache(root.path());
        cache.open().unwrap_or_else(|e| panic!("{e}"));
        let file = root.path().join("tool.wasm");
        fs::write(&file, b"one").unwrap_or_else(|e| panic!("{e}"));
        let (first, bytes) = cache.key_of(&file).unwrap_or_else(|e| panic!("{e}"));
        assert!(bytes.is_some(), "hashed the first time");
        let (again, bytes) = cache.key_of(&file).unwrap_or_else(|e| panic!("{e}"));
        assert!(bytes.is_none(), "taken from the index the second time");
        assert_eq!(first, again);
        fs::write(&file, b"two!").unwrap_or_else(|e| panic!("{e}"));
        let (changed, bytes) = cache.key_of(&file).unwrap_or_else(|e| panic!("{e}"));
        assert!(bytes.is_some());
        assert_ne!(changed, first);
        assert_eq!(changed, content_key(b"two!"));
    }
}
