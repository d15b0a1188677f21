//! Code mode: one tool, `run_code`, through which a model writes a short program that calls
//! the run's tools, loops and filters, and returns only what matters, instead of one model
//! turn per call.
//!
//! The program runs in a code runner ([`CodeRunner`](crate::CodeRunner), `wit/code/runner.wit`):
//! a fresh WebAssembly instance granted nothing, whose one way out is calling the run's tools.
//! Every call it makes is a real call ([`ToolboxCalls`]; in the agent, also approved and
//! audited): a tool the run offers, its arguments checked against its schema, run in its own
//! sandbox under its own grants and limits.

mod calls;

pub use calls::ToolboxCalls;
