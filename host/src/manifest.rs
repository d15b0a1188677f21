//! The manifest: which tool components to load, what each is granted, and its limits.
//!
//! ```toml
//! # Limits for every component, over the built-in defaults.
//! [limits]
//! memory = "64MiB"
//! timeout = "10s"
//!
//! [components.calculator]
//! path = "dist/calculator.wasm"
//!
//! [components.weather]
//! path = "dist/weather.wasm"
//! grants.http = ["wttr.in"]
//! grants.env = ["WEATHER_BASE_URL=https://wttr.in"]
//!
//! [components.files]
//! path = "dist/files.wasm"
//! grants.dirs = [
//!   { host = "data", guest = "/data" },
//!   { host = "notes", guest = "/notes", write = true },
//! ]
//! limits = { memory = "32MiB" }
//! ```
//!
//! Relative paths (components, granted directories) are relative to the manifest's directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::component::ComponentConfig;
use crate::llm::ModelConfig;
use crate::sandbox::{Grants, Limits, LimitsConfig};

/// A parsed manifest.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Limits for every component, over [`Limits::default`].
    #[serde(default)]
    pub limits: LimitsConfig,
    /// The components, by name.
    #[serde(default)]
    pub components: BTreeMap<String, ComponentEntry>,
    /// The model `host run` and `host chat` talk to; the local one when absent.
    #[serde(default)]
    pub model: ModelConfig,
    /// The file it was read from, when it was read from one.
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

/// One component of a manifest.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentEntry {
    /// The component file.
    pub path: PathBuf,
    /// What its tools may use; nothing by default.
    #[serde(default)]
    pub grants: Grants,
    /// Its limits, over the manifest's.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Options of its tools, by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolOptions>,
}

/// How the tool-calling loop treats one tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOptions {
    /// The tool's result is the run's answer: no further model request.
    #[serde(default)]
    pub return_direct: bool,
}

/// Why a manifest could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file could not be read.
    #[error("cannot read manifest {}", path.display())]
    Read {
        /// The manifest file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid manifest.
    #[error("manifest {} is not valid", path.display())]
    Parse {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong, with the line.
        #[source]
        source: toml::de::Error,
    },
}

impl Manifest {
    /// Reads and parses the manifest at `path`.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let text = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses `text` as the manifest at `path` (used to resolve relative paths).
    pub fn parse(text: &str, path: &Path) -> Result<Self, ManifestError> {
        let mut manifest: Manifest =
            toml::from_str(text).map_err(|source| ManifestError::Parse {
                path: path.to_owned(),
                source,
            })?;
        manifest.path = Some(path.to_owned());
        Ok(manifest)
    }

    /// The directory relative paths are resolved against.
    pub fn base_dir(&self) -> PathBuf {
        match self.path.as_deref().and_then(Path::parent) {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => PathBuf::from("."),
        }
    }

    /// The tools marked `return_direct`.
    pub fn return_direct_tools(&self) -> std::collections::BTreeSet<String> {
        self.components
            .values()
            .flat_map(|entry| &entry.tools)
            .filter(|(_, options)| options.return_direct)
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// What to load for each component, with paths resolved and limits combined.
    pub fn component_configs(&self) -> Vec<ComponentConfig> {
        let base = self.base_dir();
        let defaults = self.limits.apply(Limits::default());
        self.components
            .iter()
            .map(|(name, entry)| {
                let mut grants = entry.grants.clone();
                grants.resolve_paths(&base);
                ComponentConfig {
                    name: name.clone(),
                    path: base.join(&entry.path),
                    grants,
                    limits: entry.limits.apply(defaults),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{EnvGrant, HostPattern};

    const EXAMPLE: &str = r#"
        [limits]
        memory = "64MiB"

        [components.weather]
        path = "dist/weather.wasm"
        grants.http = ["wttr.in", "*.example.com"]
        grants.env = ["WEATHER_BASE_URL=http://127.0.0.1:8080", "HOME"]

        [components.files]
        path = "/abs/files.wasm"
        grants.dirs = [{ host = "data", guest = "/data" }, { host = "/n", guest = "/notes", write = true }]
        limits = { memory = "32MiB", timeout = "2s" }
    "#;

    fn parse(text: &str) -> Result<Manifest, ManifestError> {
        Manifest::parse(text, Path::new("/etc/tools/toolhost.toml"))
    }

    #[test]
    fn paths_resolve_against_the_manifest_and_limits_combine() {
        let manifest = parse(EXAMPLE).unwrap_or_else(|e| panic!("{e}"));
        let configs = manifest.component_configs();
        let files = &configs[0];
        assert_eq!(files.name, "files");
        assert_eq!(files.path, PathBuf::from("/abs/files.wasm"));
        assert_eq!(files.grants.dirs[0].host, PathBuf::from("/etc/tools/data"));
        assert!(files.grants.dirs[1].write);
        assert_eq!(files.limits.memory, 32 << 20);
        assert_eq!(files.limits.timeout, std::time::Duration::from_secs(2));

        let weather = &configs[1];
        assert_eq!(weather.path, PathBuf::from("/etc/tools/dist/weather.wasm"));
        assert_eq!(weather.limits.memory, 64 << 20);
        assert_eq!(weather.limits.cpu_time, Limits::default().cpu_time);
        assert_eq!(
            weather.grants.http[1],
            "*.example.com".parse::<HostPattern>().unwrap()
        );
        assert_eq!(weather.grants.env[1], EnvGrant::Inherit("HOME".into()));
    }

    #[test]
    fn unknown_keys_are_errors_that_name_the_key() {
        let error = parse("[components.a]\npath = \"a.wasm\"\ngrants.htp = [\"x\"]\n").unwrap_err();
        let text = format!("{:#}", anyhow::Error::from(error));
        assert!(text.contains("unknown field `htp`"), "{text}");
        assert!(text.contains("toolhost.toml"), "{text}");
    }

    #[test]
    fn bad_grants_say_how_to_write_them() {
        let error = parse("[components.a]\npath = \"a.wasm\"\ngrants.http = [\"https://x.com\"]\n")
            .unwrap_err();
        let text = format!("{:#}", anyhow::Error::from(error));
        assert!(text.contains("without scheme"), "{text}");
    }
}
