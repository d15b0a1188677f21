//! A component's bytes: loaded (validated, compiled) and described (its `describe` export
//! called, its specs and schemas checked), as `host tools` and every load do.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use toolhost::{ComponentConfig, LoadedComponent};
use toolhost_fuzz::{block_on, wasm_runtime};

/// The file each input is written to: a load reads a path.
fn component_path() -> &'static PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory"));
        dir.path().join("fuzz.wasm")
    })
}

fuzz_target!(|bytes: &[u8]| {
    let path = component_path();
    std::fs::write(path, bytes).expect("writing the component");
    let mut config = ComponentConfig::new(path);
    // A `describe` that spins is stopped in a second, not the default 30.
    config.limits.cpu_time = Duration::from_millis(500);
    config.limits.timeout = Duration::from_secs(1);
    if let Ok(component) = block_on(LoadedComponent::load(wasm_runtime(), config)) {
        for spec in component.tools() {
            assert!(toolhost::is_valid_tool_name(&spec.name), "{}", spec.name);
        }
    }
});
