//! Code mode: one tool, `run_code`, through which a model writes a short program that calls
//! the run's tools, loops and filters, and returns only what matters, instead of one model
//! turn per call.
//!
//! The program runs in a code runner ([`CodeRunner`], `wit/code/runner.wit`): a fresh
//! WebAssembly instance granted nothing, whose one way out is calling the run's tools. Every
//! call it makes is a real call ([`ToolboxCalls`]; in the agent, also approved and audited): a
//! tool the run offers, its arguments checked against its schema, run in its own sandbox under
//! its own grants and limits.
//!
//! ```no_run
//! # async fn example(runtime: toolhost::Runtime, toolbox: std::sync::Arc<toolhost::Toolbox>) -> anyhow::Result<()> {
//! use toolhost::code::{CodeMode, ToolboxCalls};
//! let code = CodeMode::load(&runtime, toolhost::code::CodeModeConfig::new("example-tools/dist/runner-js.wasm")).await?;
//! let offered = toolbox.names().into_iter().collect();
//! let calls = ToolboxCalls::new(toolbox, offered, toolhost::CallContext::default());
//! let run = code.run("return await tools.add({a: 1, b: 2});", std::sync::Arc::new(calls)).await;
//! println!("{}", code.report(&run).unwrap_or_else(|error| error));
//! # Ok(()) }
//! ```

mod calls;
mod python_signatures;
mod report;
mod signatures;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

pub use crate::engine::runner::{LANGUAGE_SECTION, Language, WASI_ALLOWED};
pub use calls::{ApproveCall, ToolboxCalls};
pub(crate) use calls::{nested_id, not_offered, outcome};
pub use python_signatures::python_signature;
pub use signatures::signature;

use crate::engine::runner::{CodeRunner, ProgramRun};
use crate::engine::runtime::Runtime;
use crate::error::LoadError;
use crate::manifest::Manifest;
use crate::sandbox::{Limits, NestedCalls, ProgramLimits};
use crate::spec::ToolSpec;

/// The tool's name when the manifest gives none.
pub const DEFAULT_TOOL: &str = "run_code";

/// The longest description of the tool by default, in bytes: the signatures of the tools
/// past it are left out (the model is told how many).
pub const DEFAULT_MAX_DESCRIPTION: usize = 16 * 1024;

/// How code mode is set up: the runner, the tool's name, a program's limits.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeModeConfig {
    /// The code runner component, whose language programs are written in (JavaScript:
    /// `example-tools/dist/runner-js.wasm`; Python: `example-tools/dist/runner-py.wasm`).
    pub runner: PathBuf,
    /// The name the model calls the tool by. Default [`DEFAULT_TOOL`].
    pub tool: String,
    /// The limits of a program's runner: CPU time, memory, the wall clock (its calls'
    /// time included), the result's size. The defaults of every call by default.
    pub limits: Limits,
    /// How many calls a program may make, at once and in all, and how much it may print.
    pub program: ProgramLimits,
    /// The longest description of the tool, in bytes. Default [`DEFAULT_MAX_DESCRIPTION`].
    pub max_description: usize,
}

/// Where the runner is when the manifest does not say: next to the example tools.
pub const DEFAULT_RUNNER: &str = "dist/runner-js.wasm";

impl CodeModeConfig {
    /// The settings of a manifest's `[code_mode]` (whether or not it is `enabled`): paths
    /// relative to the manifest's directory, its limits over the manifest's `[limits]`.
    pub fn from_manifest(manifest: &Manifest) -> Self {
        let section = &manifest.code_mode;
        let defaults = ProgramLimits::default();
        let runner = section
            .runner
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_RUNNER));
        Self {
            runner: manifest.base_dir().join(runner),
            tool: section
                .tool
                .clone()
                .unwrap_or_else(|| DEFAULT_TOOL.to_owned()),
            limits: section
                .limits
                .apply(manifest.limits.apply(Limits::default())),
            program: ProgramLimits {
                max_calls: section.max_calls.unwrap_or(defaults.max_calls),
                max_parallel_calls: section
                    .max_parallel_calls
                    .unwrap_or(defaults.max_parallel_calls),
                max_output: section
                    .max_output
                    .map_or(defaults.max_output, |size| bytes(size.0)),
            },
            max_description: section
                .max_description
                .map_or(DEFAULT_MAX_DESCRIPTION, |size| bytes(size.0)),
        }
    }

    /// Code mode with the runner at `runner` and every other setting at its default.
    pub fn new(runner: impl Into<PathBuf>) -> Self {
        Self {
            runner: runner.into(),
            tool: DEFAULT_TOOL.to_owned(),
            limits: Limits::default(),
            program: ProgramLimits::default(),
            max_description: DEFAULT_MAX_DESCRIPTION,
        }
    }
}

/// Code mode, loaded: the runner, ready, and the settings.
#[derive(Debug, Clone)]
pub struct CodeMode {
    runner: CodeRunner,
    config: CodeModeConfig,
}

impl CodeMode {
    /// Loads the runner `config` names.
    pub async fn load(runtime: &Runtime, config: CodeModeConfig) -> Result<Self, LoadError> {
        let runner = CodeRunner::load(runtime, &config.runner).await?;
        Ok(Self { runner, config })
    }

    /// The settings.
    pub fn config(&self) -> &CodeModeConfig {
        &self.config
    }

    /// The language programs are written in: the runner's.
    pub fn language(&self) -> Language {
        self.runner.language()
    }

    /// The tool's name.
    pub fn tool(&self) -> &str {
        &self.config.tool
    }

    /// The tool as the model is offered it: a description that lists `tools` (in the order
    /// given, best first) as typed signatures, as many as fit the size bound, and a schema
    /// of one argument, `code`.
    pub fn spec(&self, tools: &[&ToolSpec]) -> ToolSpec {
        ToolSpec {
            name: self.config.tool.clone(),
            description: description(self.language(), tools, self.config.max_description),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": format!(
                            "The program: the body of an async {} function that calls the tools and returns the answer's data.",
                            self.language()
                        )
                    }
                },
                "required": ["code"],
                "additionalProperties": false
            }),
            output_schema: None,
            requested: Vec::new(),
            annotations: Default::default(),
        }
    }

    /// Runs `code`, its tool calls answered by `calls`.
    pub async fn run(&self, code: &str, calls: Arc<dyn NestedCalls>) -> ProgramRun {
        self.runner
            .run(code, calls, self.config.limits, self.config.program)
            .await
    }

    /// What the model is told of `run`: one JSON text with the program's result (or its
    /// error), what it printed, and how each of its calls ended; `Err` when the program gave
    /// no result.
    pub fn report(&self, run: &ProgramRun) -> Result<String, String> {
        report::report(run)
    }

    /// The program in the arguments of a call of the tool, or what is wrong with them.
    pub fn code_of(arguments: &Value) -> Result<&str, String> {
        arguments
            .get("code")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                "the arguments must be {\"code\": \"<the program>\"}: `code` is missing or not a \
                 string"
                    .to_owned()
            })
    }
}

fn bytes(size: u64) -> usize {
    usize::try_from(size).unwrap_or(usize::MAX)
}

/// How a program is written in `language`, then the tools' signatures, within `max` bytes.
fn description(language: Language, tools: &[&ToolSpec], max: usize) -> String {
    let mut text = String::from(match language {
        Language::JavaScript => JAVASCRIPT_GUIDE,
        Language::Python => PYTHON_GUIDE,
    });
    let mut left_out = 0;
    for spec in tools {
        let signature = match language {
            Language::JavaScript => signature(spec),
            Language::Python => python_signature(spec),
        };
        if left_out > 0 || text.len() + signature.len() + 2 > max {
            left_out += 1;
            continue;
        }
        text.push_str(&signature);
        text.push_str("\n\n");
    }
    if left_out > 0 {
        text.push_str(&format!(
            "({left_out} more tools are not listed here for want of room.)\n"
        ));
    }
    text.trim_end().to_owned()
}

/// How to write a JavaScript program, for the model (`code-runners/runner-js`).
const JAVASCRIPT_GUIDE: &str = "Runs a JavaScript program in a sandbox and returns what it \
    returns. Use it to call the tools below in one step: in a loop, one call's result feeding \
    the next, many calls at once. The program is the body of an async function: call a tool \
    with `await tools.NAME({...})`, run calls that do not depend on each other with \
    `await Promise.all([...])`, print with `console.log`, and `return` only the data the \
    answer needs (it comes back as JSON; a program of one expression returns its value). A \
    tool returns its typed result (an object) when it declares one, else its text. A failed \
    call throws a ToolError with `kind` (not-offered, invalid-arguments, denied, failed) and \
    `message`; catch it to go on. There is no file system, network or clock: only the \
    tools.\n\nTools:\n";

/// How to write a Python program, for the model (`code-runners/runner-py`); the signatures
/// below it are in Python's notation ([`python_signature`]).
const PYTHON_GUIDE: &str = "Runs a Python program in a sandbox and returns what it returns. \
    Use it to call the tools below in one step: in a loop, one call's result feeding the next, \
    many calls at once. The program is the body of an async function: call a tool with \
    keyword arguments, `await tools.NAME(arg=value, ...)`, run calls that do not depend on \
    each other with `await asyncio.gather(...)`, print with `print`, and `return` only the \
    data the answer needs (it comes back as JSON; a program of one expression returns its \
    value). A tool returns its typed result (a dict) when it declares one, else its text. A \
    failed call raises a ToolError with `kind` (not-offered, invalid-arguments, denied, \
    failed) and `message`; catch it to go on. `json`, `re`, `math`, `statistics`, `csv`, \
    `datetime`, `collections` and `itertools` can be imported; there is no file system, \
    network or environment: only the tools. In the signatures below an object is a dict of \
    its fields' types, a `NotRequired` field may be missing, and a tool that takes \
    `arguments: {...}` takes them as one dict: `tools.NAME({...})`.\n\nTools:\n";
