//! Isolation: every call runs in a fresh instance, so nothing a call leaves behind (in linear
//! memory, in globals, in an interpreter's modules and caches) is visible to the next one, in
//! every language.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use toolhost::{CallContext, ComponentConfig, LoadedComponent, Toolbox};
use toolhost_tests::components::MISBEHAVE;
use toolhost_tests::{load, repo_root, runtime};

fn context() -> CallContext {
    CallContext::default()
}

#[tokio::test]
async fn every_call_gets_a_fresh_instance() {
    let toolbox = load(MISBEHAVE, |_| {}).await;
    for _ in 0..3 {
        let output = toolbox
            .call("count", "{}", &context())
            .await
            .expect("count succeeds");
        assert_eq!(
            output.text, "1",
            "a global counter never sees an earlier call"
        );
    }
}

/// After a call, the next one's instance is made ahead (a spare): it is as fresh as one made
/// at the call.
#[tokio::test]
async fn a_spare_instance_is_fresh_too() {
    let toolbox = load(MISBEHAVE, |_| {}).await;
    let component = toolbox
        .components()
        .next()
        .expect("misbehave is a component");
    for call in 1..=3 {
        let output = toolbox
            .call("count", "{}", &context())
            .await
            .expect("count succeeds");
        assert_eq!(output.text, "1", "call {call} sees no earlier call");
        // The spare is made in the background after each call.
        spare_made(component).await;
    }
}

/// Waits for `component`'s spare instance, made in the background after a call.
async fn spare_made(component: &LoadedComponent) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !component.has_spare_instance() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no spare instance of {} after a call", component.name()));
}

#[tokio::test]
async fn nothing_a_call_leaves_in_memory_reaches_the_next() {
    let toolbox = load(MISBEHAVE, |_| {}).await;
    for secret in [
        "first-secret-3f9a",
        "second-secret-77c1",
        "third-secret-0b2e",
    ] {
        let arguments = serde_json::json!({ "text": secret }).to_string();
        let output = toolbox
            .call("remember", &arguments, &context())
            .await
            .expect("remember succeeds");
        assert_eq!(
            output.text, "before: \"\"; in fresh heap: false",
            "after writing {secret}"
        );
    }
}

/// An example component of `example-tools/`, built into `example-tools/dist/` by `just tools`.
fn example(name: &str) -> PathBuf {
    let wasm = repo_root()
        .join("example-tools/dist")
        .join(format!("{name}.wasm"));
    assert!(
        wasm.exists(),
        "{} is not built; run `just tools`",
        wasm.display()
    );
    wasm
}

/// Calls `isolation_check` of the example component `name` three times: each call leaves a
/// marker in the interpreter's state and lists the ones earlier calls left, which must be none.
/// The later calls run in spare instances, made between the calls.
async fn nothing_left_behind(name: &str) {
    let toolbox = Toolbox::builder(&runtime())
        .component(ComponentConfig::new(example(name)))
        .build()
        .await
        .unwrap_or_else(|e| panic!("{name} loads: {e}"));
    for marker in ["call-1-4a7c", "call-2-91d3", "call-3-e05b"] {
        let arguments = serde_json::json!({ "marker": marker }).to_string();
        let output = toolbox
            .call("isolation_check", &arguments, &context())
            .await
            .unwrap_or_else(|e| panic!("{name}: isolation_check succeeds: {e}"));
        let report: serde_json::Value = serde_json::from_str(&output.text).expect("JSON");
        assert_eq!(
            report["left_by_earlier_calls"],
            serde_json::json!([]),
            "{name}: the call with {marker} found what earlier calls left"
        );
        let component = toolbox.components().next().expect("a component");
        spare_made(component).await;
    }
}

/// Runs `program` with `args` in `dir` (an example tool's source, run natively) and returns
/// its stdout.
fn run_natively(program: &str, args: &[&str], dir: &str) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(repo_root().join("example-tools").join(dir))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} ({e}); install it (`just setup`)"));
    assert!(
        output.status.success(),
        "{program} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn nothing_a_python_call_leaves_reaches_the_next() {
    // The check does find what a call leaves, when two calls share an interpreter.
    let native = run_natively(
        "python3",
        &[
            "-c",
            "import textkit; textkit.isolation_check('first'); \
             print(textkit.isolation_check('second'))",
        ],
        "text-python",
    );
    assert!(native.contains("module global: first"), "{native}");
    assert!(native.contains("sys.modules: first"), "{native}");
    nothing_left_behind("text-python").await;
}

#[tokio::test]
async fn nothing_a_javascript_call_leaves_reaches_the_next() {
    // The check does find what a call leaves, when two calls share an engine.
    let native = run_natively(
        "node",
        &[
            "--input-type=module",
            "-e",
            "import { isolationCheck } from './jsontools.js'; isolationCheck('first'); \
             console.log(JSON.stringify(isolationCheck('second')))",
        ],
        "json-js",
    );
    assert!(native.contains("module variable: first"), "{native}");
    assert!(native.contains("prototype: first"), "{native}");
    nothing_left_behind("json-js").await;
}
