//! The CNCF wasm artifact layout both ways with a second client, oras (PyPI): what `host push`
//! uploads, oras pulls byte-identical; what oras pushes, `host pull` takes and `host call` runs.

use toolhost_tests::components::CALCULATOR;

use crate::registry::{Registry, Workspace, oras};

#[test]
fn oras_pulls_what_host_pushed_byte_identical() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let workspace = Workspace::new();
    workspace.push(CALCULATOR, &registry.reference("tools/calculator:1"));
    let out_dir = workspace.path().join("oras-out");
    let listed = oras(&[
        "pull",
        &registry.address(),
        &format!("{}/tools/calculator:1", registry.address()),
        out_dir.to_str().unwrap(),
    ]);
    let files: Vec<&str> = listed.lines().collect();
    assert_eq!(files.len(), 1, "one layer: {listed}");
    assert_eq!(
        std::fs::read(files[0]).unwrap(),
        std::fs::read(CALCULATOR).unwrap(),
        "oras got the component's bytes"
    );
}

#[test]
fn host_pulls_and_runs_what_oras_pushed() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let workspace = Workspace::new();
    oras(&[
        "push",
        &registry.address(),
        &format!("{}/tools/calculator:oras", registry.address()),
        CALCULATOR,
    ]);
    let reference = registry.reference("tools/calculator:oras");
    let out = workspace.pull(&reference, &[]);
    out.assert_success();
    let path = out.json()["path"].as_str().unwrap().to_owned();
    assert_eq!(
        std::fs::read(path).unwrap(),
        std::fs::read(CALCULATOR).unwrap()
    );
    let out = workspace.call(&reference, "add", r#"{"a": 20, "b": 22}"#);
    out.assert_success();
    assert_eq!(out.stdout.trim(), "42.0");
}
