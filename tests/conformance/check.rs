//! `host check` as a tool's author runs it: a good component passes every check; a bad one
//! gets each failure with its reason and its fix, and exit status 1.

use serde_json::Value;
use toolhost_tests::cli::{HostCommand, HostOutput};
use toolhost_tests::components::{BAD_SPEC, CALCULATOR, NOT_A_TOOL, SLOPPY};

fn check(component: &str, json: bool) -> HostOutput {
    let command = HostCommand::new("check").arg(component);
    if json { command.arg("--json") } else { command }.run_blocking()
}

/// The checklist's items for `tool` (or the component's, for `None`), by check name.
fn items<'a>(checklist: &'a Value, tool: Option<&str>) -> Vec<(&'a str, &'a Value)> {
    checklist["checks"]
        .as_array()
        .expect("checks is a list")
        .iter()
        .filter(|item| item["tool"].as_str() == tool)
        .map(|item| (item["check"].as_str().expect("a check name"), item))
        .collect()
}

fn verdict<'a>(checklist: &'a Value, tool: &str, check: &str) -> &'a Value {
    items(checklist, Some(tool))
        .into_iter()
        .find(|(name, _)| *name == check)
        .map(|(_, item)| item)
        .unwrap_or_else(|| panic!("no {check} check for {tool} in {checklist:#}"))
}

#[test]
fn a_good_component_passes_every_check() {
    let out = check(CALCULATOR, false);
    out.assert_success();
    assert!(!out.stdout.contains("FAIL"), "{}", out.stdout);
    for line in [
        "ok    loads: a tool component: exports toolhost:tool@0.2.0",
        "ok    describe: names legal and unique",
        "ok    square_root: example call: called with {\"x\":",
        "ok    square_root: invalid arguments: refused, saying what to send",
        "ok    square_root: only what it requests: requests nothing",
    ] {
        assert!(out.stdout.contains(line), "no {line:?} in:\n{}", out.stdout);
    }
    assert!(out.stdout.contains(" 0 failed"), "{}", out.stdout);
}

#[test]
fn a_sloppy_component_gets_each_failure_with_its_fix() {
    let out = check(SLOPPY, true);
    assert_eq!(out.code(), Some(1), "{}\n{}", out.stdout, out.stderr);
    let checklist = out.json();
    assert_eq!(checklist["passed"], false);
    let fails = |tool: &str, check: &str, reason: &str, fix: &str| {
        let item = verdict(&checklist, tool, check);
        assert_eq!(item["verdict"], "fail", "{tool} {check}: {item:#}");
        let detail = item["detail"].as_str().unwrap();
        assert!(detail.contains(reason), "{tool} {check}: {detail}");
        let advice = item["fix"].as_str().unwrap();
        assert!(advice.contains(fix), "{tool} {check}: {advice}");
    };
    // The one tool that does everything right passes everything.
    for (name, item) in items(&checklist, Some("add")) {
        assert_ne!(item["verdict"], "fail", "add {name}: {item:#}");
    }
    fails(
        "echo",
        "descriptions",
        "tells a model too little",
        "say what the tool does",
    );
    fails(
        "echo",
        "invalid_arguments",
        "were accepted",
        "return invalid-arguments",
    );
    fails(
        "count_words",
        "output_schema",
        "does not fit its output schema",
        "fits the declared output schema",
    );
    fails(
        "ping",
        "only_requested",
        "127.0.0.1:9 without requesting it",
        "request it in `describe`",
    );
    fails("explode", "example_call", "crashed", "instead of panicking");

    let text = check(SLOPPY, false);
    assert_eq!(text.code(), Some(1));
    assert!(
        text.stdout.contains(
            "  FAIL  explode: example call: called with {\"text\":\"example\"}, it crashed"
        ) && text
            .stdout
            .contains("        fix: return an error instead of panicking"),
        "{}",
        text.stdout
    );
}

#[test]
fn a_component_that_does_not_load_fails_with_why() {
    let bad_name = check(BAD_SPEC, false);
    assert_eq!(bad_name.code(), Some(1), "{}", bad_name.stderr);
    assert!(
        bad_name.stdout.contains("FAIL  bad name!: describe: ")
            && bad_name.stdout.contains("has a name models cannot call"),
        "{}",
        bad_name.stdout
    );
    let not_a_tool = check(NOT_A_TOOL, true);
    assert_eq!(not_a_tool.code(), Some(1));
    let checklist = not_a_tool.json();
    let (name, item) = items(&checklist, None)[0];
    assert_eq!((name, &item["verdict"]), ("loads", &Value::from("fail")));
    assert!(
        item["fix"].as_str().unwrap().contains("host new"),
        "{item:#}"
    );
}

#[test]
fn a_missing_file_is_a_usage_error() {
    let out = check("no/such/tool.wasm", false);
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("no/such/tool.wasm is not a file; build the component first"),
        "{}",
        out.stderr
    );
}
