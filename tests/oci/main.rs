//! Components from OCI registries, against real parts: Debian's `docker-registry`
//! (distribution 2.8) started on 127.0.0.1 by each test, with and without htpasswd
//! authentication; `oras` from PyPI as the second client; the calculator example built from
//! source; the `host` binary as a user runs it (`push`, `pull`, `lock`, `sign`, `mcp`, `call`,
//! `inspect`, `tools`). A misbehaving registry (one that answers 10 GB, one that never
//! answers) is a raw HTTP server on 127.0.0.1 in `bad_input`.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod auth;
mod bad_input;
mod interop;
mod lock;
mod registry;
mod serve;
mod signatures;
mod traces;
