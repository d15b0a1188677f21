//! Push, pull, the cache by digest, and a component served by reference: `host mcp`, `host
//! call`, `host inspect`, a manifest's `path`; and all of it again with the registry stopped.

use std::os::unix::fs::MetadataExt as _;

use serde_json::json;
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::mcp::StdioServer;

use crate::registry::{Registry, Workspace, assert_refused};

fn sha256_of(path: &str) -> String {
    use sha2::Digest as _;
    let bytes = std::fs::read(path).unwrap();
    let hash = sha2::Sha256::digest(&bytes);
    format!(
        "sha256:{}",
        hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

#[test]
fn a_pushed_component_is_pulled_verified_and_kept_private_by_digest() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let workspace = Workspace::new();
    let reference = registry.reference("tools/calculator:1");
    let pushed = workspace.push(CALCULATOR, &reference);
    assert_eq!(pushed["component_digest"], sha256_of(CALCULATOR));
    let digest = pushed["digest"].as_str().unwrap().to_owned();

    let out = workspace.pull(&reference, &[]);
    out.assert_success();
    let pulled = out.json();
    assert_eq!(pulled["digest"], digest.as_str());
    assert_eq!(pulled["from_cache"], false);
    let path = pulled["path"].as_str().unwrap();
    assert_eq!(
        std::fs::read(path).unwrap(),
        std::fs::read(CALCULATOR).unwrap()
    );
    assert_eq!(std::fs::metadata(path).unwrap().mode() & 0o777, 0o600);
    let store = std::fs::metadata(workspace.store()).unwrap();
    assert_eq!(store.mode() & 0o777, 0o700);

    // The same bytes pushed again are the same manifest: no time stamp in it.
    let again = workspace.push(CALCULATOR, &registry.reference("tools/calculator:2"));
    assert_eq!(again["digest"], digest.as_str());

    // By digest, with the registry stopped: from the store.
    registry.stop();
    let by_digest = format!("{}@{digest}", reference.trim_end_matches(":1"));
    let out = workspace.pull(&by_digest, &[]);
    out.assert_success();
    assert_eq!(out.json()["from_cache"], true);

    // A copy altered in the cache is refused, not run.
    let mut bytes = std::fs::read(path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(path, bytes).unwrap();
    let out = workspace.call(&by_digest, "add", r#"{"a": 1, "b": 2}"#);
    assert_refused(&out, &[&by_digest, "it was altered"]);
    assert!(out.stdout.is_empty(), "nothing ran: {}", out.stdout);
}

#[tokio::test]
async fn host_mcp_serves_a_reference_and_again_with_the_registry_stopped() {
    toolhost_tests::require_guests();
    let mut registry = Some(Registry::start());
    let workspace = Workspace::new();
    let reference = registry.as_ref().unwrap().reference("tools/calculator:1");
    workspace.push(CALCULATOR, &reference);
    let cache = workspace.path().join("cache");
    let docker = workspace.path().join("docker");
    let env = [
        ("TOOLHOST_CACHE", cache.as_path()),
        ("DOCKER_CONFIG", docker.as_path()),
    ];
    for round in ["registry up", "registry stopped"] {
        let mut server = StdioServer::start_with_env(&[&reference], &env).await;
        let listed = server.request("tools/list", json!({})).await;
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{round}: no tools: {listed}\n{}", server.stderr.text()))
            .iter()
            .filter_map(|tool| tool["name"].as_str())
            .collect();
        assert!(names.contains(&"square_root"), "{round}: {names:?}");
        let answer = server
            .call("square_root", json!({ "x": 475695037565u64 }))
            .await;
        assert_eq!(
            answer["result"]["structuredContent"]["result"], 689706.4865324959,
            "{round}: {answer}"
        );
        drop(server);
        // Stopped after the first start: the second has the cache alone.
        if let Some(registry) = registry.take() {
            registry.stop();
        }
    }
}

#[test]
fn a_manifest_path_call_and_inspect_take_references() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let workspace = Workspace::new();
    let reference = registry.reference("tools/calculator:1");
    let digest = workspace.push(CALCULATOR, &reference)["digest"]
        .as_str()
        .unwrap()
        .to_owned();

    let out = workspace.call(&reference, "add", r#"{"a": 40, "b": 2}"#);
    out.assert_success();
    assert_eq!(out.stdout.trim(), "42.0");

    let out = workspace
        .host("inspect")
        .args([reference.as_str(), "--json"])
        .run_blocking();
    out.assert_success();
    let inspected = out.json();
    assert_eq!(
        inspected["sha256"],
        sha256_of(CALCULATOR).trim_start_matches("sha256:")
    );
    assert_eq!(inspected["path"], reference.as_str());
    assert_eq!(inspected["oci"]["digest"], digest.as_str());

    let manifest = workspace.manifest(&format!(
        "[components.calc]\npath = \"{reference}\"\nprefix = \"calc_\"\n"
    ));
    let out = workspace.call(&manifest, "calc_multiply", r#"{"a": 6, "b": 7}"#);
    out.assert_success();
    assert_eq!(out.stdout.trim(), "42.0");
    let out = workspace.host("tools").arg(&manifest).run_blocking();
    out.assert_success();
    assert!(out.stdout.contains(&reference), "{}", out.stdout);
    assert!(out.stdout.contains(&digest), "{}", out.stdout);
}

#[test]
fn a_tag_never_pulled_is_an_error_naming_it_when_the_registry_is_down() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let reference = registry.reference("tools/calculator:1");
    registry.stop();
    let workspace = Workspace::new();
    let out = workspace.call(&reference, "add", r#"{"a": 1, "b": 2}"#);
    assert_refused(
        &out,
        &[
            &reference,
            "cannot be reached",
            "the cache has no copy of it",
        ],
    );
    assert!(out.stdout.is_empty(), "nothing ran: {}", out.stdout);
}
