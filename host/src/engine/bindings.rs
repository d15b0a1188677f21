//! The host side of the `toolhost:tool` WIT packages: `wit/tool.wit` (0.2.0) and
//! `wit/0.1.0/tool.wit`, which components built before 0.2 target; and of the code runner's,
//! `wit/code/runner.wit` (`toolhost:code@0.1.0`). This is the one place bindings are generated.
//! Everything else uses 0.2's types ([`wit`]): a 0.1 component's specs and results are turned
//! into them here, which is all the adapting 0.1 needs (0.2 only adds).

use wasmtime::Store;
use wasmtime::component::{InstancePre, Linker};

use crate::sandbox::LogLevel;
use crate::sandbox::store::StoreState;

mod v1 {
    wasmtime::component::bindgen!({
        path: "../wit/0.1.0",
        world: "toolbox",
        exports: { default: async },
    });
}

mod v2 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "toolbox",
        exports: { default: async },
    });
}

/// 0.2's optional `resources` export, looked for on its own.
mod v2_resources {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "offers-resources",
        exports: { default: async },
    });
}

/// 0.2's optional `prompts` export, looked for on its own.
mod v2_prompts {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "offers-prompts",
        exports: { default: async },
    });
}

/// The code runner's world: the tools and the output in, `run` out. A program's host
/// functions are answered from its store's [`ProgramState`](crate::sandbox::program::ProgramState);
/// starting a call past the limit and printing too much trap, to end the program.
#[cfg(feature = "code-mode")]
mod code {
    wasmtime::component::bindgen!({
        path: "../wit/code",
        world: "code-runner",
        imports: {
            "toolhost:code/tools.start-call": trappable,
            "toolhost:code/tools.finish-call": async | trappable,
            "toolhost:code/output.print": trappable,
        },
        exports: { default: async },
    });
}

#[cfg(feature = "code-mode")]
pub(crate) use code::exports::toolhost::code::runner as wit_runner;
#[cfg(feature = "code-mode")]
pub(crate) use code::{CodeRunner as RunnerInstance, CodeRunnerPre as RunnerInstancePre};

pub(crate) use v2_prompts::exports::toolhost::tool::prompts as wit_prompts;
pub(crate) use v2_resources::exports::toolhost::tool::resources as wit_resources;

pub(crate) use v2::exports::toolhost::tool::tools as wit;
pub(crate) use v2::toolhost::tool::report;

/// The versions of the contract this host speaks, newest first.
pub(crate) const CONTRACTS: [Contract; 2] = [Contract::V0_2, Contract::V0_1];

/// A version of the tool contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Contract {
    /// `toolhost:tool@0.1.0`: a result is one text.
    #[serde(rename = "0.1.0")]
    V0_1,
    /// `toolhost:tool@0.2.0`: results of content parts, progress and log lines, annotations.
    #[serde(rename = "0.2.0")]
    V0_2,
}

impl Contract {
    /// The versioned name of the interface a component of this version exports.
    pub(crate) fn interface(self) -> &'static str {
        match self {
            Self::V0_1 => "toolhost:tool/tools@0.1.0",
            Self::V0_2 => "toolhost:tool/tools@0.2.0",
        }
    }

    /// The version, as WIT writes it (`0.2.0`).
    pub fn version(self) -> &'static str {
        match self {
            Self::V0_1 => "0.1.0",
            Self::V0_2 => "0.2.0",
        }
    }
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "toolhost:tool@{}", self.version())
    }
}

/// Adds what 0.2 components may import from the host (`report`) to `linker`.
pub(crate) fn add_to_linker(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    report::add_to_linker::<StoreState, wasmtime::component::HasSelf<StoreState>>(linker, |state| {
        state
    })
}

/// A linker for code runners: their world's two interfaces, and WASI's without `wasi:http`
/// (a Python runner links against them; the store's WASI context grants nothing through
/// them, see [`WASI_ALLOWED`](crate::engine::runner::WASI_ALLOWED)).
#[cfg(feature = "code-mode")]
pub(crate) fn runner_linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<StoreState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    code::CodeRunner::add_to_linker::<StoreState, wasmtime::component::HasSelf<StoreState>>(
        &mut linker,
        |state| state,
    )?;
    Ok(linker)
}

/// A component's code, ready to instantiate, with the exports of its contract version.
#[derive(Clone)]
pub(crate) struct ToolInstancePre {
    tools: ToolsPre,
    /// Whether it exports 0.2's `resources`, and `prompts`.
    offers: (bool, bool),
}

#[derive(Clone)]
enum ToolsPre {
    V0_1(v1::ToolboxPre<StoreState>),
    V0_2(v2::ToolboxPre<StoreState>),
}

/// A component instance.
pub(crate) struct ToolInstance {
    instance: wasmtime::component::Instance,
    tools: Tools,
}

enum Tools {
    V0_1(v1::Toolbox),
    V0_2(v2::Toolbox),
}

impl ToolInstancePre {
    /// `pre` with the exports of `contract`, or why they do not match it.
    pub(crate) fn new(
        contract: Contract,
        pre: InstancePre<StoreState>,
    ) -> wasmtime::Result<ToolInstancePre> {
        let (tools, offers) = match contract {
            Contract::V0_1 => (ToolsPre::V0_1(v1::ToolboxPre::new(pre)?), (false, false)),
            Contract::V0_2 => {
                let resources = v2_resources::OffersResourcesPre::new(pre.clone()).is_ok();
                let prompts = v2_prompts::OffersPromptsPre::new(pre.clone()).is_ok();
                (
                    ToolsPre::V0_2(v2::ToolboxPre::new(pre)?),
                    (resources, prompts),
                )
            }
        };
        Ok(Self { tools, offers })
    }

    /// The version of the contract the component targets.
    pub(crate) fn contract(&self) -> Contract {
        match self.tools {
            ToolsPre::V0_1(_) => Contract::V0_1,
            ToolsPre::V0_2(_) => Contract::V0_2,
        }
    }

    /// Whether the component exports `resources`, and `prompts`.
    pub(crate) fn offers(&self) -> (bool, bool) {
        self.offers
    }

    /// A fresh instance in `store`.
    pub(crate) async fn instantiate_async(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<ToolInstance> {
        let (instance, tools) = match &self.tools {
            ToolsPre::V0_1(pre) => {
                let instance = pre.instance_pre().instantiate_async(&mut *store).await?;
                (
                    instance,
                    Tools::V0_1(v1::Toolbox::new(&mut *store, &instance)?),
                )
            }
            ToolsPre::V0_2(pre) => {
                let instance = pre.instance_pre().instantiate_async(&mut *store).await?;
                (
                    instance,
                    Tools::V0_2(v2::Toolbox::new(&mut *store, &instance)?),
                )
            }
        };
        Ok(ToolInstance { instance, tools })
    }
}

impl ToolInstance {
    /// The instance's `resources` export.
    pub(crate) fn resources(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<v2_resources::OffersResources> {
        v2_resources::OffersResources::new(store, &self.instance)
    }

    /// The instance's `prompts` export.
    pub(crate) fn prompts(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<v2_prompts::OffersPrompts> {
        v2_prompts::OffersPrompts::new(store, &self.instance)
    }

    /// Calls `describe`.
    pub(crate) async fn describe(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Vec<wit::ToolSpec>> {
        match &self.tools {
            Tools::V0_1(instance) => {
                let specs = instance.toolhost_tool_tools().call_describe(store).await?;
                Ok(specs.into_iter().map(from_v1::spec).collect())
            }
            Tools::V0_2(instance) => instance.toolhost_tool_tools().call_describe(store).await,
        }
    }

    /// Calls `call`. A 0.1 component's text comes back as the text of a result with no
    /// parts ([`VersionedOutcome::V0_1`]): its meaning (JSON when the tool declares an output
    /// schema) is 0.1's.
    pub(crate) async fn call(
        &self,
        store: &mut Store<StoreState>,
        tool: &str,
        arguments: &str,
        context: &wit::CallContext,
    ) -> wasmtime::Result<Result<VersionedOutcome, wit::ToolError>> {
        match &self.tools {
            Tools::V0_1(instance) => {
                let context = v1::exports::toolhost::tool::tools::CallContext {
                    call_id: context.call_id.clone(),
                    values: context.values.clone(),
                };
                let result = instance
                    .toolhost_tool_tools()
                    .call_call(store, tool, arguments, &context)
                    .await?;
                Ok(result.map(VersionedOutcome::V0_1).map_err(from_v1::error))
            }
            Tools::V0_2(instance) => Ok(instance
                .toolhost_tool_tools()
                .call_call(store, tool, arguments, context)
                .await?
                .map(VersionedOutcome::V0_2)),
        }
    }
}

/// What a successful call returned, in its contract's form.
pub(crate) enum VersionedOutcome {
    /// 0.1: one text (JSON when the tool declares an output schema).
    V0_1(String),
    /// 0.2: parts and structured content, or a request for input.
    V0_2(wit::Outcome),
}

/// 0.1's types in 0.2's form.
mod from_v1 {
    use super::{v1, wit};

    type Old = v1::exports::toolhost::tool::tools::ToolSpec;
    type OldCapability = v1::exports::toolhost::tool::tools::Capability;
    type OldError = v1::exports::toolhost::tool::tools::ToolError;

    pub(super) fn spec(spec: Old) -> wit::ToolSpec {
        wit::ToolSpec {
            name: spec.name,
            title: None,
            description: spec.description,
            input_schema: spec.input_schema,
            output_schema: spec.output_schema,
            annotations: wit::Annotations {
                read_only: None,
                destructive: None,
                idempotent: None,
                open_world: None,
            },
            capabilities: spec
                .capabilities
                .into_iter()
                .map(|request| wit::CapabilityRequest {
                    capability: match request.capability {
                        OldCapability::Http(v) => wit::Capability::Http(v),
                        OldCapability::Env(v) => wit::Capability::Env(v),
                        OldCapability::ReadDir(v) => wit::Capability::ReadDir(v),
                        OldCapability::WriteDir(v) => wit::Capability::WriteDir(v),
                        OldCapability::Socket(v) => wit::Capability::Socket(v),
                    },
                    reason: request.reason,
                })
                .collect(),
        }
    }

    pub(super) fn error(error: OldError) -> wit::ToolError {
        match error {
            OldError::InvalidArguments(message) => wit::ToolError::InvalidArguments(message),
            OldError::Failed(message) => wit::ToolError::Failed(message),
        }
    }
}

impl report::Host for StoreState {
    fn progress(&mut self, done: f64, total: Option<f64>, message: Option<String>) {
        self.reports.progress(done, total, message);
    }

    fn log(&mut self, level: report::Level, message: String) {
        let level = match level {
            report::Level::Debug => LogLevel::Debug,
            report::Level::Info => LogLevel::Info,
            report::Level::Notice => LogLevel::Notice,
            report::Level::Warning => LogLevel::Warning,
            report::Level::Error => LogLevel::Error,
        };
        self.reports.log(level, message);
    }
}

#[cfg(feature = "code-mode")]
mod program_host {
    use super::code::toolhost::code::{output, tools};
    use crate::sandbox::program::ProgramState;
    use crate::sandbox::store::StoreState;
    use crate::sandbox::{NestedErrorKind, ProgramStop};

    /// A code runner's store without a program: only a runner built against another world
    /// could get here, and it ends.
    fn program(state: &mut StoreState) -> wasmtime::Result<&mut ProgramState> {
        state
            .program
            .as_mut()
            .ok_or_else(|| wasmtime::format_err!("this store runs no program"))
    }

    impl tools::Host for StoreState {
        fn start_call(&mut self, name: String, arguments: String) -> wasmtime::Result<u32> {
            program(self)?.start(name, arguments).map_err(stop)
        }

        async fn finish_call(
            &mut self,
            started: u32,
        ) -> wasmtime::Result<Result<tools::CallResult, tools::CallError>> {
            let outcome = program(self)?.finish(started).await.map_err(stop)?;
            Ok(outcome
                .map(|result| tools::CallResult {
                    text: result.text,
                    structured: result.structured,
                })
                .map_err(|error| tools::CallError {
                    kind: match error.kind {
                        NestedErrorKind::NotOffered => tools::ErrorKind::NotOffered,
                        NestedErrorKind::InvalidArguments => tools::ErrorKind::InvalidArguments,
                        NestedErrorKind::Denied => tools::ErrorKind::Denied,
                        // `finish` ends the program on a paused call instead.
                        NestedErrorKind::Failed | NestedErrorKind::Paused => {
                            tools::ErrorKind::Failed
                        }
                    },
                    message: error.message,
                }))
        }
    }

    impl output::Host for StoreState {
        fn print(&mut self, text: String) -> wasmtime::Result<()> {
            program(self)?.print(&text).map_err(stop)
        }
    }

    fn stop(stop: ProgramStop) -> wasmtime::Error {
        wasmtime::Error::new(stop)
    }
}
