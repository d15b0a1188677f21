//! The example tool components and the cases of their `conformance.toml`, shared by the
//! conformance suite and the benchmark.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;
use toolhost::Grants;

use crate::repo_root;

/// The cases of a component's `conformance.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cases {
    /// Grants for the `ok` and `fails` calls; host paths relative to the tool's directory.
    #[serde(default)]
    pub grants: Grants,
    /// Calls that must succeed.
    #[serde(default)]
    pub ok: Vec<Case>,
    /// Calls the tool itself must fail.
    #[serde(default)]
    pub fails: Vec<Case>,
    /// Calls that must be refused with nothing granted.
    #[serde(default)]
    pub denied: Vec<Case>,
    /// Calls the tool must refuse as invalid arguments (with the grants above), its message
    /// containing `expect`.
    #[serde(default)]
    pub invalid: Vec<Case>,
}

/// One call.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// Text the result must contain.
    pub expect: Option<String>,
    /// Fields the result's structured content must have, with these values (tool contract
    /// 0.2).
    pub structured: Option<Value>,
    /// The kinds of the result's parts, in order: `text`, `image`, `audio`, `resource_link`,
    /// `resource` (an embedded one).
    pub parts: Option<Vec<String>>,
    /// Whether the tool must report progress while it runs.
    #[serde(default)]
    pub progress: bool,
    /// Whether the tool must write a log line while it runs.
    #[serde(default)]
    pub logs: bool,
}

/// A tool component of `example-tools/`: its source directory and its built file.
pub struct Subject {
    /// The directory's name.
    pub name: String,
    /// The source directory.
    pub dir: PathBuf,
    /// `example-tools/dist/<name>.wasm`.
    pub wasm: PathBuf,
}

impl Subject {
    /// Its cases, or what is wrong with its `conformance.toml`.
    pub fn cases(&self) -> Result<Cases, String> {
        let file = self.dir.join("conformance.toml");
        let text = std::fs::read_to_string(&file).map_err(|_| {
            format!(
                "has no {}; add one with its ok, fails and denied cases",
                file.display()
            )
        })?;
        toml::from_str(&text).map_err(|e| format!("{} is not valid: {e}", file.display()))
    }

    /// The grants of its cases, with paths resolved.
    pub fn grants(&self, cases: &Cases) -> Grants {
        let mut grants = cases.grants.clone();
        grants.resolve_paths(&self.dir);
        grants
    }
}

/// Every directory of `example-tools/` that holds a tool's source (a `Cargo.toml` or a
/// `build.sh`), by name.
pub fn subjects() -> Vec<Subject> {
    let tools = repo_root().join("example-tools");
    let mut subjects: Vec<Subject> = std::fs::read_dir(&tools)
        .expect("example-tools/ is readable")
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|dir| dir.join("Cargo.toml").exists() || dir.join("build.sh").exists())
        .map(|dir| {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Subject {
                wasm: tools.join("dist").join(format!("{name}.wasm")),
                name,
                dir,
            }
        })
        .collect();
    subjects.sort_by(|a, b| a.name.cmp(&b.name));
    subjects
}
