//! The engine: where a tool call runs in WebAssembly.
//!
//! - [`runtime`]: the wasmtime engine, linker and instance pool, set up once per process;
//! - [`cache`]: the on-disk cache of compiled components (and of what they describe);
//! - [`component`]: loading a component (compiled once, described once) and calling its tools;
//! - `component_file`: a component's bytes, from its file or pulled from a registry
//!   ([`crate::oci`]);
//! - [`call`]: the call path: an instance slot, a fresh instance (or the spare one), the
//!   export called within the sandbox's limits, and the outcome turned into a result or a
//!   [`CallError`](crate::error::CallError);
//! - [`spare_instance`]: an instance made ahead, while the host is idle, for a component's
//!   next call;
//! - [`describe`]: a component's answer to `describe`, checked and turned into tool specs;
//! - [`runner`]: code runners (code mode): a program a model wrote, run in a fresh instance
//!   granted nothing, its tool calls answered by the host;
//! - [`bindings`]: the host side of `wit/tool.wit`, generated here and nowhere else.
//!
//! What a call may use and how much of it is the sandbox's ([`crate::sandbox`]): the engine
//! asks it for a store per call and for the verdict when a call fails.

pub(crate) mod bindings;
pub mod cache;
pub mod call;
pub mod component;
mod component_file;
pub(crate) mod describe;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod offered;
pub(crate) mod result;
#[cfg(feature = "code-mode")]
pub mod runner;
pub mod runtime;
pub(crate) mod spare_instance;
