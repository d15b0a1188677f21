//! toolhost runs LLM tools as sandboxed WebAssembly components.
//!
//! A tool component exports the `toolhost:tool/tools` interface of `wit/tool.wit`: the names,
//! descriptions and JSON schemas of its tools, and a function to call one. This crate loads
//! such components (compiling each once, into an on-disk cache), and calls their tools, each
//! call in a fresh instance that sees only what the component was granted (directories,
//! environment variables, HTTP hosts, sockets: nothing by default), under limits on memory,
//! CPU time, wall-clock time and result size.
//!
//! ```no_run
//! use toolhost::{CallContext, Manifest, Runtime, RuntimeConfig, Toolbox};
//!
//! # async fn example() -> anyhow::Result<()> {
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let manifest = Manifest::load("example-tools/toolhost.toml".as_ref())?;
//! let toolbox = Toolbox::load(&runtime, manifest.component_configs(), None).await?;
//! for spec in toolbox.specs() {
//!     println!("{}: {}", spec.name, spec.description);
//! }
//! let output = toolbox
//!     .call("square_root", r#"{"x": 475695037565}"#, &CallContext::default())
//!     .await?;
//! println!("{}", output.text); // 689706.4865324959
//! # Ok(()) }
//! ```
//!
//! Errors are typed: [`LoadError`] when a component cannot be loaded, [`CallError`] when a
//! call does not produce a result (unknown tool, invalid arguments, tool failure, denied
//! capability, timeout, memory limit, oversized result, crash). None of them takes the host
//! down.

pub mod agent;
mod bindings;
mod cache;
mod call;
mod component;
mod error;
pub mod llm;
mod manifest;
mod runtime;
pub mod sandbox;
mod spec;
mod toolbox;

pub use cache::{CompileEvent, CompileSource, default_cache_dir};
pub use call::{CallContext, ToolOutput};
pub use component::{CompileObserver, ComponentConfig, LoadedComponent};
pub use error::{CallError, LoadError, TimeLimit};
pub use manifest::{ComponentEntry, Manifest, ManifestError, ToolOptions};
pub use runtime::{Runtime, RuntimeConfig};
pub use sandbox::{Grants, Limits};
pub use spec::{Capability, CapabilityRequest, ToolSpec, is_valid_tool_name};
pub use toolbox::Toolbox;
