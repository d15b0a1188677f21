//! The exact stdout, stderr and exit status of the main commands, pinned (insta). Times,
//! sizes, hashes and paths are filtered (tests/support/snapshot.rs). After an intended change
//! of output, review and accept the new snapshots with `cargo insta review` (or
//! `INSTA_UPDATE=always cargo test`), then read the diff.

use std::io::Read as _;
use std::path::Path;
use std::process::{Output, Stdio};

use toolhost_tests::cli::{HostCommand, HostOutput};
use toolhost_tests::components::{CALCULATOR, FILES, MISBEHAVE};
use toolhost_tests::snapshot::render;

/// `host ARGS`, run to its end.
fn host(args: &[&str]) -> HostOutput {
    command(args).run_blocking()
}

fn command(args: &[&str]) -> HostCommand {
    let (subcommand, args) = args.split_first().expect("a subcommand");
    HostCommand::new(subcommand).args(args)
}

/// A manifest with the files tool (granted a data directory) and the calculator.
fn manifest(dir: &Path) -> String {
    std::fs::create_dir_all(dir.join("data")).expect("created");
    let path = dir.join("toolhost.toml");
    std::fs::write(
        &path,
        format!(
            "[components.files]\npath = {FILES:?}\ngrants.dirs = [{{ host = \"data\", guest = \"/data\" }}]\n\n\
             [components.calculator]\npath = {CALCULATOR:?}\nlimits.memory = \"32MiB\"\nprefix = \"calc_\"\n"
        ),
    )
    .expect("written");
    path.to_str().expect("UTF-8").to_owned()
}

#[test]
fn inspect() {
    insta::assert_snapshot!(render(&host(&["inspect", CALCULATOR]), &[]));
}

#[test]
fn inspect_json() {
    insta::assert_snapshot!(render(&host(&["inspect", CALCULATOR, "--json"]), &[]));
}

#[test]
fn call() {
    let output = host(&["call", CALCULATOR, "square_root", r#"{"x": 475695037565}"#]);
    insta::assert_snapshot!(render(&output, &[]));
}

#[test]
fn call_invalid_arguments() {
    let output = host(&["call", CALCULATOR, "square_root", r#"{"x": "four"}"#]);
    insta::assert_snapshot!(render(&output, &[]));
}

#[test]
fn call_denied_json() {
    let output = host(&[
        "call",
        MISBEHAVE,
        "fetch",
        r#"{"address": "http://127.0.0.1:9/secret"}"#,
        "--json",
    ]);
    insta::assert_snapshot!(render(&output, &[]));
}

#[test]
fn tools() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let manifest = manifest(dir.path());
    let output = host(&["tools", &manifest]);
    insta::assert_snapshot!(render(&output, &[(dir.path(), "[DIR]")]));
}

#[test]
fn a_missing_manifest() {
    let output = host(&["tools", "/surely/not/here.toml"]);
    insta::assert_snapshot!(render(&output, &[]));
}

#[test]
fn every_command_gives_the_same_hint_for_a_missing_manifest() {
    let missing = "/surely/not/here.toml";
    let hint = "there is no manifest at /surely/not/here.toml; give the path of one (for the \
                example tools: example-tools/toolhost.toml)";
    for args in [
        vec!["tools", missing],
        vec!["call", missing, "add", "{}"],
        vec!["run", "-m", missing, "What is 1+1?"],
        vec!["chat", "-m", missing],
    ] {
        let output = host(&args);
        let stderr = &output.stderr;
        assert_eq!(output.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(hint), "{args:?}: {stderr}");
    }
}

/// Runs `args` with stdout a pipe whose reader is already gone, as `| head -1` leaves it
/// once `head` has its line.
fn into_closed_pipe(args: &[&str]) -> HostOutput {
    let mut child = command(args)
        .into_command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("host runs");
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr)
        .expect("stderr is readable");
    let status = child.wait().expect("host ends");
    HostOutput::from(Output {
        status,
        stdout: Vec::new(),
        stderr: stderr.into_bytes(),
    })
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let manifest = manifest(dir.path());
    for args in [
        vec!["tools", manifest.as_str()],
        vec!["inspect", CALCULATOR, "--json"],
        vec!["call", CALCULATOR, "add", r#"{"a": 1, "b": 2}"#],
    ] {
        let output = into_closed_pipe(&args);
        let stderr = &output.stderr;
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
        assert_eq!(output.code(), Some(0), "{args:?}: {stderr}");
    }
}
