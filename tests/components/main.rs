//! Tool components, against real ones built from source by `tests/build.rs`: loading and the
//! compile cache, calls and their typed errors, limits, grants, isolation between calls, the
//! instance pool, `toolhost::Host` from a manifest, and the `host` commands that work on
//! components (`call`, `inspect`, `tools`).

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod calls;
mod cli;
mod code;
mod code_python;
mod docs;
mod entry;
mod isolation;
mod limits;
mod load;
mod per_caller;
mod pool;
mod sandbox;
mod snapshots;
