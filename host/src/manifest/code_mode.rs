//! The `[code_mode]` section: the model offered one tool whose program calls the others
//! (docs/code-mode.md).

use std::path::PathBuf;

use serde::Deserialize;

use crate::sandbox::LimitsConfig;
use crate::units::ByteSize;

/// The `[code_mode]` section, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeModeSection {
    /// Whether `host run`, `host chat` and `Host::run` offer the model the one tool (the
    /// `--code-mode` flag turns it on too). Off by default.
    #[serde(default)]
    pub enabled: bool,
    /// The code runner component, relative to the manifest's directory; default
    /// `dist/runner-js.wasm` (where `just tools` builds it for the example manifest).
    #[serde(default)]
    pub runner: Option<PathBuf>,
    /// The tool's name; default `run_code`.
    #[serde(default)]
    pub tool: Option<String>,
    /// The most tool calls one program may start; default 100.
    #[serde(default)]
    pub max_calls: Option<u32>,
    /// The most of them that run at once; default 4.
    #[serde(default)]
    pub max_parallel_calls: Option<usize>,
    /// The most a program may print; default 64 KiB.
    #[serde(default)]
    pub max_output: Option<ByteSize>,
    /// The longest description of the tool (the signatures of the tools included); default
    /// 16 KiB.
    #[serde(default)]
    pub max_description: Option<ByteSize>,
    /// The limits of a program's runner, over the manifest's `[limits]`.
    #[serde(default)]
    pub limits: LimitsConfig,
}
