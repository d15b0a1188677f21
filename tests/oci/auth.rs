//! A registry that wants a password (htpasswd, bcrypt): anonymous is refused with what to do;
//! the Docker config's `auths` entry works, and so do the variables, for the registry they
//! name only.

use base64::Engine as _;
use toolhost_tests::components::CALCULATOR;

use crate::registry::{PASSWORD, Registry, USER, Workspace, assert_refused};

#[test]
fn anonymous_is_refused_and_the_docker_config_logs_in() {
    toolhost_tests::require_guests();
    let registry = Registry::start_with_auth();
    let workspace = Workspace::new();
    let reference = registry.reference("tools/calculator:1");

    let out = workspace
        .host("push")
        .args([CALCULATOR, reference.as_str()])
        .run_blocking();
    assert_refused(&out, &[&reference]);

    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    std::fs::write(
        workspace.path().join("docker/config.json"),
        serde_json::json!({ "auths": { registry.address(): { "auth": auth } } }).to_string(),
    )
    .unwrap();
    workspace.push(CALCULATOR, &reference);
    workspace.pull(&reference, &[]).assert_success();

    // Without the config, a pull is refused with where credentials come from.
    std::fs::remove_file(workspace.path().join("docker/config.json")).unwrap();
    let fresh = Workspace::new();
    let out = fresh.pull(&reference, &[]);
    assert_refused(
        &out,
        &[
            &reference,
            "401",
            "docker login",
            "TOOLHOST_REGISTRY_USERNAME",
        ],
    );
}

#[test]
fn the_variables_log_in_to_the_registry_they_name_only() {
    toolhost_tests::require_guests();
    let registry = Registry::start_with_auth();
    let workspace = Workspace::new();
    let reference = registry.reference("tools/calculator:1");
    let with_variables = |named: &str| {
        workspace
            .host("push")
            .args([CALCULATOR, reference.as_str()])
            .env("TOOLHOST_REGISTRY", named)
            .env("TOOLHOST_REGISTRY_USERNAME", USER)
            .env("TOOLHOST_REGISTRY_PASSWORD", PASSWORD)
            .run_blocking()
    };
    assert_refused(&with_variables("registry.example.com"), &[&reference]);
    with_variables(&registry.address()).assert_success();
}
