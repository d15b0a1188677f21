//! toolhost runs LLM tools as sandboxed WebAssembly components.
//!
//! A tool component exports the `toolhost:tool/tools` interface of `wit/tool.wit`: the names,
//! descriptions and JSON schemas of its tools, and a function to call one. This crate loads
//! such components (compiling each once, into an on-disk cache), and calls their tools, each
//! call in a fresh instance that sees only what the component was granted (directories,
//! environment variables, HTTP hosts, sockets: nothing by default), under limits on memory,
//! CPU time, wall-clock time and result size. It also runs the tool-calling loop against a
//! model (OpenAI or Anthropic wire format, or a local model it starts itself).
//!
//! Tools can also come from MCP servers ([`mcp::client`]) and from the embedding
//! application's own functions ([`NativeTools`]); those are **not sandboxed**
//! ([`Origin::is_sandboxed`]), and the toolbox offers them next to the components.
//!
//! [`Host`] is the entry point: a manifest in, tools, a model and a loop out.
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! let host = toolhost::Host::load("example-tools/toolhost.toml").await?;
//! for spec in host.specs() {
//!     println!("{}: {}", spec.name, spec.description);
//! }
//! let output = host
//!     .call("square_root", r#"{"x": 475695037565}"#, &toolhost::CallContext::default())
//!     .await?;
//! println!("{}", output.text); // 689706.4865324959
//! let answer = host.run("What is the square root of 475695037565?").await?;
//! println!("{}", answer.text);
//! # Ok(()) }
//! ```
//!
//! # Cargo features
//!
//! The default features are the whole product; an application that embeds the library can
//! turn off what it does not use (`default-features = false`), and keeps the engine, the
//! sandbox, the toolbox, the tool-calling loop and the OpenAI and Anthropic clients:
//!
//! - `cli`: the `host` command, with [`check`] and [`scaffold`] (`host check`, `host new`);
//!   its commands for the features below come with them.
//! - `mcp-server`: [`mcp::server`], `host mcp`.
//! - `mcp-client`: [`mcp::client`], MCP servers as a tool source (a manifest's
//!   `[mcp_servers]`), with OAuth.
//! - `oci`: [`oci`], components from OCI registries (`oci://`) and their signatures.
//! - `local-model`: [`llm::local`], the local model the host starts itself (the default
//!   provider when a manifest names none).
//! - `code-mode`: [`code`], one tool whose program calls the run's tools, in a code runner
//!   granted nothing else (a manifest's `[code_mode]`).
//!
//! A manifest that needs a feature the build leaves out (an `oci://` component, an
//! `[mcp_servers]` entry, the local model) fails to load with an error naming the feature.
//!
//! Errors are typed: [`HostError`] when a host cannot be set up, [`LoadError`] when a component
//! cannot be loaded, [`CallError`] when a call does not produce a result (unknown tool,
//! invalid arguments, tool failure, denied capability, timeout, memory limit, oversized
//! result, crash). None of them takes the host down.

#![warn(missing_docs)]

pub mod agent;
mod arguments;
mod asking;
mod caller;
#[cfg(feature = "cli")]
pub mod check;
#[cfg(feature = "code-mode")]
pub mod code;
mod content;
mod engine;
mod english;
mod error;
mod file;
mod host;
// Newline-delimited JSON over stdio: MCP's, both ways.
#[cfg(any(feature = "mcp-client", feature = "mcp-server"))]
mod lines;
pub mod llm;
mod manifest;
#[cfg(any(feature = "mcp-client", feature = "mcp-server"))]
pub mod mcp;
mod native_tools;
#[cfg(feature = "oci")]
pub mod oci;
mod offers;
#[cfg(any(feature = "local-model", feature = "mcp-client"))]
mod process;
pub mod sandbox;
#[cfg(feature = "cli")]
pub mod scaffold;
pub mod source;
mod spec;
pub mod telemetry;
pub mod tls;
mod toolbox;
pub mod units;

// The names an embedding application uses most, at the crate's root. Code inside the crate
// imports each from the module that defines it.
pub use arguments::{Arguments, ArgumentsError};
pub use asking::{Ask, AskError, Asker};
pub use caller::Caller;
pub use content::{
    ContentPart, EmbeddedResource, InputRequest, InputRequired, Media, ResourceLink,
};
pub use engine::bindings::Contract;
pub use engine::cache::{CompileEvent, CompileSource, default_cache_dir};
pub use engine::call::CallPhases;
pub use engine::component::{ComponentConfig, LoadedComponent};
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use engine::fuzzing as engine_fuzzing;
#[cfg(feature = "code-mode")]
pub use engine::runner::{CodeRunner, ProgramRun};
pub use engine::runtime::{CompileObserver, Runtime, RuntimeConfig};
#[cfg(feature = "code-mode")]
pub use error::ProgramError;
pub use error::{CallError, ErrorKind, LoadError, TimeLimit};
pub use file::{MAX_COMPONENT_SIZE, MAX_MANIFEST_SIZE};
pub use host::{Host, HostBuilder, HostError};
pub use manifest::{
    AccessRule, ComponentEntry, MAX_SOURCES, Manifest, ManifestError, McpConfig, PerCallerLimits,
    TaskSupport, TasksSection, ToolOptions,
};
pub use native_tools::NativeTools;
pub use offers::{
    FilledPrompt, OfferError, Offers, Prompt, PromptArgument, PromptInput, PromptMessage,
    PromptOutcome, Resource, ResourceContents, ResourceTemplate, Role,
};
pub use sandbox::{Grants, Limits};
pub use source::{CallContext, Origin, SourceOptions, ToolOutput, ToolSource};
pub use spec::{Capability, CapabilityRequest, ToolAnnotations, ToolSpec, is_valid_tool_name};
pub use toolbox::{Catalog, SkippedSource, ToolChanges, Toolbox, ToolboxBuilder};
