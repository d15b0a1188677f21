//! `host lock` and `toolhost.lock`: a tag that moves after locking is an error naming both
//! digests, nothing of the new one stored or run; `host lock` again accepts it.

use toolhost_tests::components::{CALCULATOR, CLOCK};

use crate::registry::{Registry, Workspace, assert_refused};

#[test]
fn a_tag_moved_under_a_lock_file_is_refused_with_both_digests() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let workspace = Workspace::new();
    let reference = registry.reference("tools/calculator:1");
    let first = workspace.push(CALCULATOR, &reference);
    let first = first["digest"].as_str().unwrap().to_owned();
    let manifest = workspace.manifest(&format!("[components.calc]\npath = \"{reference}\"\n"));

    let out = workspace.host("lock").arg(&manifest).run_blocking();
    out.assert_success();
    let lock = std::fs::read_to_string(workspace.path().join("toolhost.lock")).unwrap();
    assert!(
        lock.contains(&format!("\"{reference}\" = \"{first}\"")),
        "{lock}"
    );

    // Someone pushes another component under the same tag.
    let moved = workspace.push(CLOCK, &reference);
    let moved = moved["digest"].as_str().unwrap().to_owned();
    let blobs_before = workspace.stored_blobs();
    let out = workspace.call(&manifest, "add", r#"{"a": 1, "b": 2}"#);
    assert_refused(
        &out,
        &[&reference, &first, &moved, "toolhost.lock", "host lock"],
    );
    assert!(out.stdout.is_empty(), "nothing ran: {}", out.stdout);
    assert_eq!(
        workspace.stored_blobs(),
        blobs_before,
        "nothing of it was stored"
    );

    // Locking again accepts the new digest.
    workspace
        .host("lock")
        .arg(&manifest)
        .run_blocking()
        .assert_success();
    let out = workspace.call(&manifest, "current_time", "{}");
    out.assert_success();
}

#[test]
fn a_reference_missing_from_the_lock_file_is_refused() {
    toolhost_tests::require_guests();
    let registry = Registry::start();
    let workspace = Workspace::new();
    let one = registry.reference("tools/calculator:1");
    let two = registry.reference("tools/clock:1");
    workspace.push(CALCULATOR, &one);
    workspace.push(CLOCK, &two);
    let manifest = workspace.manifest(&format!("[components.calc]\npath = \"{one}\"\n"));
    workspace
        .host("lock")
        .arg(&manifest)
        .run_blocking()
        .assert_success();
    workspace.manifest(&format!(
        "[components.calc]\npath = \"{one}\"\n[components.clock]\npath = \"{two}\"\n"
    ));
    let out = workspace.host("tools").arg(&manifest).run_blocking();
    assert_refused(&out, &[&two, "is not pinned in", "run `host lock`"]);
}
