//! Integration tests of the toolhost library and the `host` binary, against real components
//! built from source by `tests/build.rs`.

mod calls;
mod cli;
mod limits;
mod load;
mod sandbox;
