//! Integration tests of the toolhost library and the `host` binary, against real components
//! built from source by `tests/build.rs`.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod calls;
mod cli;
mod entry;
mod isolation;
mod limits;
mod load;
mod pool;
mod sandbox;
mod snapshots;
