//! Code runners (code mode, `wit/code/runner.wit`): loading a runner component, and running
//! one program in a fresh instance of it, granted nothing, under the limits of a call and a
//! program's own, its tool calls answered by whoever runs it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::Store;

use super::bindings::{RunnerInstance, RunnerInstancePre, runner_linker, wit_runner};
use super::component::compiled;
use super::component_file::{blocking, content_key_of};
use super::runtime::Runtime;
use crate::error::{CallError, LoadError, ProgramError, TimeLimit};
use crate::sandbox::limits::within;
use crate::sandbox::program::ProgramState;
use crate::sandbox::store::{Failure, StoreState, verdict};
use crate::sandbox::{Limits, NestedCall, NestedCalls, ProgramLimits, ProgramStop, Sandbox};

/// The name a runner's failures carry in messages (the tool the model called).
const LABEL: &str = "run_code";

/// The WASI interfaces a code runner may import besides its world's (at any 0.2 version):
/// those of a command's standard library, which CPython's runtime (componentize-py) links
/// against whether or not a program uses them. They grant a runner nothing: its WASI context
/// ([`Sandbox::empty`]) has no preopened directory (so `wasi:filesystem` has no descriptor to
/// open anything from), no environment variable or argument, an empty stdin, stdout and
/// stderr into bounded buffers nobody reads, and TCP, UDP and name lookups turned off (every
/// socket operation is refused). What they do give is the time (`wasi:clocks`), random bytes
/// (`wasi:random`) and ending the instance (`wasi:cli/exit`), which reach nothing outside.
/// `wasi:http` is not among them: a runner that imports it is refused.
pub const WASI_ALLOWED: [&str; 6] = [
    "wasi:cli",
    "wasi:clocks",
    "wasi:filesystem",
    "wasi:io",
    "wasi:random",
    "wasi:sockets",
];

/// Whether a runner may import `name`: its world's interfaces, or one of [`WASI_ALLOWED`].
fn allowed_import(name: &str) -> bool {
    if name.starts_with("toolhost:code/") {
        return true;
    }
    WASI_ALLOWED.iter().any(|package| {
        name.strip_prefix(package)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|rest| rest.contains("@0.2."))
    })
}

/// The custom section in which a runner names its language (`javascript`, `python`), written
/// by its build (code-runners/language.py); a runner without one is JavaScript, the language
/// of the one runner there was before runners declared theirs.
pub const LANGUAGE_SECTION: &str = "toolhost:code/language";

/// The language a code runner runs programs in: what the tool's description tells the model
/// to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// JavaScript (`code-runners/runner-js`).
    JavaScript,
    /// Python (`code-runners/runner-py`).
    Python,
}

impl Language {
    /// The language's name as a runner declares it (`javascript`, `python`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::JavaScript => "javascript",
            Self::Python => "python",
        }
    }

    fn named(name: &str) -> Option<Self> {
        [Self::JavaScript, Self::Python]
            .into_iter()
            .find(|language| language.as_str() == name)
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::JavaScript => "JavaScript",
            Self::Python => "Python",
        })
    }
}

/// The language the runner at `path` declares in its [`LANGUAGE_SECTION`] (read from
/// `bytes`, or from the file when the cache read none).
async fn declared_language(path: &Path, bytes: Option<&[u8]>) -> Result<Language, LoadError> {
    let name = match bytes {
        Some(bytes) => language_section(bytes),
        None => {
            let file = path.to_owned();
            blocking(move || {
                crate::file::read(&file, crate::file::MAX_COMPONENT_SIZE, "a component")
                    .map(|bytes| language_section(&bytes))
            })
            .await
            .map_err(|source| LoadError::Read {
                path: path.to_owned(),
                source,
            })?
        }
    };
    let Some(name) = name else {
        return Ok(Language::JavaScript);
    };
    Language::named(&name).ok_or_else(|| LoadError::WrongWorld {
        path: path.to_owned(),
        problem: format!(
            "its `{LANGUAGE_SECTION}` section names the language `{name}`, which this host \
             cannot tell a model how to write; the languages it knows are javascript and python"
        ),
    })
}

/// The text of a component's own (top-level) [`LANGUAGE_SECTION`], if it has one. A
/// component that does not parse has none here: compiling it says what is wrong.
fn language_section(bytes: &[u8]) -> Option<String> {
    let mut depth = 0_usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.ok()? {
            wasmparser::Payload::ModuleSection { .. }
            | wasmparser::Payload::ComponentSection { .. } => depth += 1,
            wasmparser::Payload::End(_) if depth > 0 => depth -= 1,
            wasmparser::Payload::CustomSection(section)
                if depth == 0 && section.name() == LANGUAGE_SECTION =>
            {
                return Some(String::from_utf8_lossy(section.data()).trim().to_owned());
            }
            _ => {}
        }
    }
    None
}

/// A code runner component, loaded: compiled once, instantiated fresh for every program.
///
/// ```no_run
/// # async fn example(runtime: toolhost::Runtime, calls: std::sync::Arc<dyn toolhost::sandbox::NestedCalls>) -> anyhow::Result<()> {
/// use toolhost::sandbox::ProgramLimits;
/// let runner = toolhost::CodeRunner::load(&runtime, "example-tools/dist/runner-js.wasm").await?;
/// let run = runner
///     .run("return 6 * 7;", calls, toolhost::Limits::default(), ProgramLimits::default())
///     .await;
/// assert_eq!(run.result?, serde_json::json!(42));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CodeRunner {
    runtime: Runtime,
    pre: RunnerInstancePre<StoreState>,
    path: PathBuf,
    language: Language,
}

impl std::fmt::Debug for CodeRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeRunner")
            .field("path", &self.path)
            .field("language", &self.language)
            .finish_non_exhaustive()
    }
}

/// How a program ended: its result (the JSON value it returned) or why there is none, what
/// it printed, and each tool call it made.
#[derive(Debug)]
pub struct ProgramRun {
    /// The value the program returned, or why there is none.
    pub result: Result<serde_json::Value, ProgramError>,
    /// What it printed (`console.log` in JavaScript, `print` in Python), up to
    /// [`ProgramLimits::max_output`].
    pub printed: String,
    /// The tool calls it made, in the order it started them.
    pub calls: Vec<NestedCall>,
    /// How long it took, its tool calls included.
    pub duration: Duration,
}

impl CodeRunner {
    /// Loads the runner at `path` (compiled once, into the runtime's cache) and reads the
    /// language it declares. A component that imports anything but the runner's two interfaces
    /// and the WASI interfaces of [`WASI_ALLOWED`] (`wasi:http`, say, or a tool's `report`) is
    /// refused.
    pub async fn load(runtime: &Runtime, path: impl Into<PathBuf>) -> Result<Self, LoadError> {
        let path = path.into();
        let (key, bytes) = content_key_of(runtime, &path, None).await?;
        let language = declared_language(&path, bytes.as_deref()).await?;
        let (component, _) = compiled(runtime, &path, &key, bytes).await?;
        let wrong_world = |problem: String| LoadError::WrongWorld {
            path: path.clone(),
            problem,
        };
        let engine = runtime.engine();
        let foreign: Vec<String> = component
            .component_type()
            .imports(engine)
            .map(|(name, _)| name.to_owned())
            .filter(|name| !allowed_import(name))
            .collect();
        if !foreign.is_empty() {
            return Err(wrong_world(format!(
                "a code runner may import only toolhost:code's `tools` and `output` \
                 (wit/code/runner.wit) and WASI's {}, and this one imports {}; build it against \
                 that world with everything else turned off",
                WASI_ALLOWED.join(", "),
                foreign.join(", ")
            )));
        }
        let linker = runner_linker(engine).map_err(|e| LoadError::Compile {
            path: path.clone(),
            source: anyhow::anyhow!("cannot set up a code runner's linker: {e:#}"),
        })?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(RunnerInstancePre::new)
            .map_err(|e| {
                wrong_world(format!(
                    "it is not a code runner of toolhost:code@0.1.0 ({e:#}); build it against \
                     wit/code/runner.wit's world `code-runner`"
                ))
            })?;
        Ok(Self {
            runtime: runtime.clone(),
            pre,
            path,
            language,
        })
    }

    /// The language the runner runs programs in.
    pub fn language(&self) -> Language {
        self.language
    }

    /// The runner's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `code` in a fresh instance granted nothing, under `limits` (CPU time, memory, the
    /// wall clock, its tool calls' time included, and the result's size) and `program`'s;
    /// its tool calls go to `calls`.
    pub async fn run(
        &self,
        code: &str,
        calls: Arc<dyn NestedCalls>,
        limits: Limits,
        program: ProgramLimits,
    ) -> ProgramRun {
        let started = Instant::now();
        let sandbox = Sandbox::empty(limits);
        let deadline = tokio::time::Instant::now().checked_add(limits.timeout);
        let ended = |result| ProgramRun {
            result,
            printed: String::new(),
            calls: Vec::new(),
            duration: started.elapsed(),
        };
        let Some(slot) = self.runtime.call_slot(deadline).await else {
            return ended(Err(ProgramError::Runner(CallError::Timeout {
                tool: LABEL.to_owned(),
                kind: TimeLimit::Queued,
                limit: limits.timeout,
            })));
        };
        let mut store = match self.runtime.new_store(&sandbox, false) {
            Ok(store) => store,
            Err(source) => {
                return ended(Err(ProgramError::Runner(CallError::Instantiate {
                    tool: LABEL.to_owned(),
                    source,
                })));
            }
        };
        store.data_mut().program = Some(ProgramState::new(calls, program));
        let work = async {
            let instance = self
                .pre
                .instantiate_async(&mut store)
                .await
                .map_err(Failure::Start)?;
            call_run(&instance, &mut store, code)
                .await
                .map_err(Failure::Run)
        };
        let outcome = within(deadline, work).await;
        if let Some(program) = &mut store.data_mut().program {
            program.settle().await;
        }
        let state = store.data_mut();
        let (printed, made) = match &mut state.program {
            Some(program) => program.take(),
            None => (String::new(), Vec::new()),
        };
        let result = judge(outcome, state, &limits, program);
        drop(store);
        drop(slot);
        ProgramRun {
            result,
            printed,
            calls: made,
            duration: started.elapsed(),
        }
    }
}

async fn call_run(
    instance: &RunnerInstance,
    store: &mut Store<StoreState>,
    code: &str,
) -> wasmtime::Result<Result<String, wit_runner::RunError>> {
    instance
        .toolhost_code_runner()
        .call_run(&mut *store, code)
        .await
}

/// The program's value, or why there is none: the wall clock, a stop of the host's (too many
/// calls, too much output), the runner's own error (syntax, a throw), or the sandbox's
/// verdict on a failure (CPU time, memory, a crash).
fn judge(
    outcome: Result<
        Result<Result<String, wit_runner::RunError>, Failure>,
        tokio::time::error::Elapsed,
    >,
    state: &StoreState,
    limits: &Limits,
    program: ProgramLimits,
) -> Result<serde_json::Value, ProgramError> {
    let stopped = state.program.as_ref().and_then(|program| program.stopped);
    match outcome {
        Err(_elapsed) => Err(ProgramError::Runner(CallError::Timeout {
            tool: LABEL.to_owned(),
            kind: TimeLimit::WallClock,
            limit: limits.timeout,
        })),
        Ok(Ok(Ok(text))) => {
            limits
                .check_result(LABEL, text.len())
                .map_err(ProgramError::Runner)?;
            serde_json::from_str(&text).map_err(|e| {
                ProgramError::Thrown(format!(
                    "the runner returned a result that is not JSON: {e}"
                ))
            })
        }
        Ok(Ok(Err(wit_runner::RunError::Syntax(message)))) => Err(ProgramError::Syntax(message)),
        Ok(Ok(Err(wit_runner::RunError::Thrown(message)))) => Err(ProgramError::Thrown(message)),
        Ok(Err(failure)) => Err(match stopped {
            Some(ProgramStop::TooManyCalls) => ProgramError::TooManyCalls {
                limit: program.max_calls,
            },
            Some(ProgramStop::OutputTooLarge) => ProgramError::OutputTooLarge {
                limit: program.max_output,
            },
            Some(ProgramStop::Paused) => ProgramError::Paused,
            None => ProgramError::Runner(verdict(failure, state, limits, LABEL.to_owned())),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runner_may_import_its_world_and_wasi_0_2_s_command_interfaces_only() {
        for allowed in [
            "toolhost:code/tools@0.1.0",
            "wasi:cli/environment@0.2.0",
            "wasi:sockets/tcp@0.2.9",
            "wasi:filesystem/preopens@0.2.0",
        ] {
            assert!(allowed_import(allowed), "{allowed}");
        }
        for refused in [
            "wasi:http/outgoing-handler@0.2.0",
            "wasi:cli/environment@0.3.0",
            "wasi:clix/environment@0.2.0",
            "wasi:cli",
            "toolhost:tool/report@0.2.0",
        ] {
            assert!(!allowed_import(refused), "{refused}");
        }
    }

    #[test]
    fn the_language_is_read_from_the_top_level_section_only() {
        let section = |name: &str, text: &str| {
            let mut payload = vec![u8::try_from(name.len()).unwrap()];
            payload.extend_from_slice(name.as_bytes());
            payload.extend_from_slice(text.as_bytes());
            let mut bytes = vec![0, u8::try_from(payload.len()).unwrap()];
            bytes.extend(payload);
            bytes
        };
        let component = b"\0asm\x0d\0\x01\0".to_vec();
        assert_eq!(language_section(&component), None);
        let mut named = component.clone();
        named.extend(section("other", "python"));
        named.extend(section(LANGUAGE_SECTION, "python"));
        assert_eq!(language_section(&named).as_deref(), Some("python"));
        // A core module inside the component that carries the section names nothing.
        let mut module = b"\0asm\x01\0\0\0".to_vec();
        module.extend(section(LANGUAGE_SECTION, "python"));
        let mut nested = component;
        nested.push(1); // a core module section
        nested.push(u8::try_from(module.len()).unwrap());
        nested.extend(module);
        assert_eq!(language_section(&nested), None);
    }
}
