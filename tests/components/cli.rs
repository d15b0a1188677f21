//! The `host` binary: what a user sees on stdout, stderr and in the exit code.

use std::process::{Command, Output};

use toolhost_tests::components::{CALCULATOR, FILES, MISBEHAVE, NOT_A_TOOL};
use toolhost_tests::{host_binary, target_dir};

fn host(args: &[&str]) -> Output {
    Command::new(host_binary())
        .args(args)
        .env(
            "TOOLHOST_COMPONENT_CACHE",
            target_dir().join("test-compile-cache"),
        )
        .output()
        .expect("host runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn call_prints_the_result_on_stdout() {
    let output = host(&["call", CALCULATOR, "square_root", r#"{"x": 475695037565}"#]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "689706.4865324959\n");
}

#[test]
fn a_failed_call_exits_1_with_the_error_on_stderr() {
    let output = host(&["call", CALCULATOR, "square_root", r#"{"x": "four"}"#]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert!(
        stderr(&output).starts_with("error: invalid arguments for `square_root`"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn call_json_reports_kind_and_message() {
    let output = host(&["call", MISBEHAVE, "fail", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["kind"], "tool_failed");
    assert_eq!(
        value["error"]["message"],
        "`fail` failed: it went wrong on purpose"
    );
}

#[test]
fn tool_output_never_reaches_the_hosts_stdout() {
    let output = host(&["call", MISBEHAVE, "chatter", r#"{"bytes": 2000}"#]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "done\n", "only the result is on stdout");
    assert!(
        stderr(&output).contains("[tool stdout] 0123456789abcdef"),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("[tool stderr] chatter done"));
}

#[test]
fn grant_flags_reach_the_tool() {
    let data = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(data.path().join("a.txt"), "alpha").expect("written");
    let dir = format!("{}::/data", data.path().display());
    let output = host(&[
        "call",
        FILES,
        "read_file",
        r#"{"path": "/data/a.txt"}"#,
        "--dir",
        &dir,
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "alpha\n");

    let output = host(&["call", FILES, "read_file", r#"{"path": "/data/a.txt"}"#]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "without --dir there is nothing to read"
    );
}

#[test]
fn inspect_json_lists_tools_and_imports() {
    let output = host(&["inspect", CALCULATOR, "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let names: Vec<&str> = value["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["add", "multiply", "square_root"]);
    assert!(
        value["imports"]
            .as_array()
            .expect("imports")
            .iter()
            .any(|i| i.as_str().is_some_and(|i| i.starts_with("wasi:cli/")))
    );
}

#[test]
fn inspect_text_shows_arguments_and_descriptions() {
    let output = host(&["inspect", CALCULATOR]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("square_root\n  Computes the square root"),
        "{text}"
    );
    assert!(
        text.contains("x  number, required  The number to take the square root of"),
        "{text}"
    );
}

#[test]
fn a_load_error_exits_2_and_names_the_file() {
    let output = host(&["inspect", NOT_A_TOOL]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.starts_with("error: "), "{text}");
    assert!(text.contains("not-a-tool.wasm"), "{text}");
}

#[test]
fn tools_lists_grants_next_to_requests() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir(dir.path().join("data")).expect("created");
    let manifest = dir.path().join("toolhost.toml");
    std::fs::write(
        &manifest,
        format!(
            "[components.files]\npath = {FILES:?}\ngrants.dirs = [{{ host = \"data\", guest = \"/data\" }}]\n\n\
             [components.calculator]\npath = {CALCULATOR:?}\nlimits.memory = \"32MiB\"\n"
        ),
    )
    .expect("written");
    let output = host(&["tools", manifest.to_str().expect("UTF-8")]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("read /data [granted] by list_files"),
        "{text}"
    );
    assert!(
        text.contains("write /notes [NOT granted] by write_note"),
        "{text}"
    );
    assert!(text.contains("memory 32 MiB"), "{text}");
    assert!(
        text.contains("granted:   nothing"),
        "the calculator has no grants: {text}"
    );
}
