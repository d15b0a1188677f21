//! Shared pieces of toolhost's integration tests: the guest components built from source,
//! a runtime, and a real HTTP server on 127.0.0.1.

pub mod authorization;
pub mod cli;
pub mod code_mode;
pub mod conformance;
pub mod error;
pub mod eval;
pub mod issuer;
pub mod load;
pub mod mcp;
pub mod model;
pub mod otlp;
pub mod peers;
pub mod redis;
pub mod server;
pub mod snapshot;
pub mod tls;

use std::path::PathBuf;
use std::sync::OnceLock;

use toolhost::{ComponentConfig, Runtime, RuntimeConfig, Toolbox};

/// Paths of the guest components `build.rs` built: the Rust example tools and the test
/// guests, one constant each (`CALCULATOR`, `MISBEHAVE`, ...).
pub mod components {
    include!(concat!(env!("OUT_DIR"), "/components.rs"));
}

/// Fails the test, saying what to run, when the guests could not be built (a missing
/// `wasm32-wasip2` target, say): `cargo test` still builds, and only the tests that need a
/// guest fail.
pub fn require_guests() {
    if let Some(error) = components::BUILD_ERROR {
        panic!("this test needs the test guests, which could not be built: {error}");
    }
}

/// `component`, a guest built by its `build.sh` (`components::MCP_CONFORMANCE_PY`, say), once
/// it is known to be built: fails the test with why it is not, and what to run, otherwise (a
/// missing componentize-py, say).
pub fn scripted(component: &'static str) -> &'static str {
    require_guests();
    if let Some((_, error)) = components::SCRIPT_BUILD_ERRORS
        .iter()
        .find(|(path, _)| *path == component)
    {
        panic!("this test needs {component}, which could not be built: {error}");
    }
    component
}

/// A runtime shared by the tests of one binary, with a compile cache of its own under the
/// target directory (so repeated test runs do not recompile).
pub fn runtime() -> Runtime {
    require_guests();
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            Runtime::new(RuntimeConfig {
                cache_dir: Some(target_dir().join("test-compile-cache")),
                ..RuntimeConfig::default()
            })
            .expect("the runtime starts")
        })
        .clone()
}

/// The cargo target directory the tests run from.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    exe.ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").exists())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// Loads one component with `configure` applied to its config.
pub async fn load(path: &str, configure: impl FnOnce(&mut ComponentConfig)) -> Toolbox {
    let mut config = ComponentConfig::new(path);
    configure(&mut config);
    match Toolbox::builder(&runtime()).component(config).build().await {
        Ok(toolbox) => toolbox,
        Err(error) => panic!("loading {path} failed: {}", error::chain(&error)),
    }
}

/// A reqwest client builder for the tests' own requests. The host's reqwest has no crypto
/// provider of its own (toolhost's `tls` module installs ring as the process's default), so
/// a test process installs it the same way before it builds a client.
pub fn http_client() -> reqwest::ClientBuilder {
    toolhost::tls::install_crypto_provider();
    reqwest::Client::builder()
}

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_owned()
}

/// The `host` binary of the same build profile as the running test. `just test` builds it
/// first; plain `cargo test` does not build binaries of other packages.
pub fn host_binary() -> PathBuf {
    require_guests();
    let exe = std::env::current_exe().expect("the test binary has a path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in <target>/<profile>/deps");
    let host = profile_dir.join("host");
    assert!(
        host.exists(),
        "{} does not exist; build it with `cargo build -p toolhost` (`just test` does)",
        host.display()
    );
    host
}
