//! The `host` binary: what a user sees on stdout, stderr and in the exit code.

use toolhost_tests::cli::{HostCommand, HostOutput};
use toolhost_tests::components::{
    CALCULATOR, FILES, MCP_CONFORMANCE, MISBEHAVE, NOT_A_TOOL, WEATHER,
};
use toolhost_tests::server::{Reply, TestServer};

/// `host ARGS`, run to its end.
fn host(args: &[&str]) -> HostOutput {
    let (subcommand, args) = args.split_first().expect("a subcommand");
    HostCommand::new(subcommand).args(args).run_blocking()
}

#[test]
fn call_prints_the_result_on_stdout() {
    let output = host(&["call", CALCULATOR, "square_root", r#"{"x": 475695037565}"#]);
    output.assert_success();
    assert_eq!(output.stdout, "689706.4865324959\n");
}

#[test]
fn a_failed_call_exits_1_with_the_error_on_stderr() {
    let output = host(&["call", CALCULATOR, "square_root", r#"{"x": "four"}"#]);
    assert_eq!(output.code(), Some(1));
    assert_eq!(output.stdout, "");
    assert!(
        output
            .stderr
            .starts_with("error: invalid arguments for `square_root`"),
        "{}",
        output.stderr
    );
}

#[test]
fn call_json_reports_kind_and_message() {
    let output = host(&["call", MISBEHAVE, "fail", "--json"]);
    assert_eq!(output.code(), Some(1));
    let value = output.json();
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["kind"], "tool_failed");
    assert_eq!(
        value["error"]["message"],
        "`fail` failed: it went wrong on purpose"
    );
}

#[test]
fn a_tool_that_exits_is_told_as_an_exit() {
    let output = host(&["call", MISBEHAVE, "exit", r#"{"status": 1}"#, "--json"]);
    assert_eq!(output.code(), Some(1));
    let value = output.json();
    assert_eq!(value["error"]["kind"], "exited", "{value}");
    assert_eq!(
        value["error"]["message"],
        "`exit` exited with status 1 instead of returning a result; its stderr ends: the \
         misbehave tool exits on purpose"
    );
}

#[test]
fn tool_output_never_reaches_the_hosts_stdout() {
    let output = host(&["call", MISBEHAVE, "chatter", r#"{"bytes": 2000}"#]);
    output.assert_success();
    assert_eq!(output.stdout, "done\n", "only the result is on stdout");
    assert!(
        output.stderr.contains("[tool stdout] 0123456789abcdef"),
        "{}",
        output.stderr
    );
    assert!(output.stderr.contains("[tool stderr] chatter done"));
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
    output.assert_success();
    assert_eq!(output.stdout, "alpha\n");

    let output = host(&["call", FILES, "read_file", r#"{"path": "/data/a.txt"}"#]);
    assert_eq!(
        output.code(),
        Some(1),
        "without --dir there is nothing to read"
    );
}

/// `host call WEATHER current_weather {"city": "Paris"}` against a server on 127.0.0.1, with
/// `grant` naming that server (`--allow-http`, or the deprecated `--http`).
async fn weather_call(grant: &str) -> (HostOutput, usize) {
    let server = TestServer::start(|request| {
        if request.path == "/Paris?format=j1" {
            Reply::text(
                200,
                r#"{"current_condition": [{"temp_C": "14", "FeelsLikeC": "12",
                "humidity": "71", "windspeedKmph": "9", "weatherDesc": [{"value": "Fog"}]}],
                "nearest_area": [{"areaName": [{"value": "Paris"}],
                "country": [{"value": "France"}]}]}"#,
            )
        } else {
            Reply::text(404, "unknown location")
        }
    })
    .await;
    let base = format!("WEATHER_BASE_URL={}", server.url());
    let output = HostCommand::new("call")
        .args([WEATHER, "current_weather", r#"{"city": "Paris"}"#])
        .args(["--env", &base, grant, &server.authority()])
        .run()
        .await;
    (output, server.requests().len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_http_grants_outgoing_http() {
    let (output, requests) = weather_call("--allow-http").await;
    output.assert_success();
    assert!(output.stdout.contains("Fog"), "{}", output.stdout);
    assert_eq!(requests, 1);
    assert!(!output.stderr.contains("deprecated"), "{}", output.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_old_http_grant_flag_still_works_with_a_warning() {
    let (output, requests) = weather_call("--http").await;
    output.assert_success();
    assert!(output.stdout.contains("Fog"), "{}", output.stdout);
    assert_eq!(requests, 1);
    assert!(
        output
            .stderr
            .contains("`--http HOST` is deprecated here; use `--allow-http HOST`"),
        "{}",
        output.stderr
    );
}

#[test]
fn inspect_json_lists_tools_and_imports() {
    let output = host(&["inspect", CALCULATOR, "--json"]);
    output.assert_success();
    let value = output.json();
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
    output.assert_success();
    let text = output.stdout;
    assert!(text.contains("\ncontract: toolhost:tool@0.2.0\n"), "{text}");
    assert!(
        text.contains("  says it is: read-only, idempotent, closed-world\n"),
        "{text}"
    );
    assert!(
        text.contains("square_root (Square root)\n  Computes the square root"),
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
    assert_eq!(output.code(), Some(2));
    let text = output.stderr;
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
    output.assert_success();
    let text = output.stdout;
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

#[test]
fn a_tools_progress_and_log_lines_are_on_stderr_marked_as_the_tools() {
    let output = host(&["call", MISBEHAVE, "report", r#"{"times": 100000}"#]);
    output.assert_success();
    assert_eq!(output.stdout, "reported 100000 times\n");
    let progress: Vec<&str> = output
        .stderr
        .lines()
        .filter(|line| line.starts_with("[tool report] ") && line.contains(" of 100000"))
        .collect();
    assert_eq!(progress.first(), Some(&"[tool report] 1 of 100000"));
    assert_eq!(progress.last(), Some(&"[tool report] 100000 of 100000"));
    // Bounded: a hundred thousand reports, a few dozen lines.
    assert!(progress.len() < 100, "{} progress lines", progress.len());
    assert!(output.stderr.contains("[tool report] info: line 1\n"));
}

#[test]
fn a_tool_that_asks_for_input_fails_where_no_one_can_answer() {
    let output = host(&[
        "call",
        MCP_CONFORMANCE,
        "test_input_required_result_elicitation",
        "{}",
    ]);
    assert_eq!(output.code(), Some(1));
    assert!(
        output.stderr.contains(
            "asks for input before it can finish (elicitation/create), which `host call` \
             cannot give"
        ),
        "{}",
        output.stderr
    );
}

#[test]
fn the_python_text_tool_reports_its_progress_through_a_large_file() {
    let wasm = toolhost_tests::repo_root().join("example-tools/dist/text-python.wasm");
    assert!(
        wasm.exists(),
        "{} is not built; run `just tools`",
        wasm.display()
    );
    let data = tempfile::tempdir().unwrap();
    let text = "the quick brown fox jumps over the lazy dog\n".repeat(20_000);
    std::fs::write(data.path().join("large.txt"), &text).unwrap();
    let dir = format!("{}::/data", data.path().display());
    let output = host(&[
        "call",
        wasm.to_str().unwrap(),
        "file_text_stats",
        r#"{"path": "/data/large.txt", "top": 1}"#,
        "--dir",
        &dir,
    ]);
    output.assert_success();
    assert!(
        output.stdout.contains(r#""words": 180000"#),
        "{}",
        output.stdout
    );
    let progress: Vec<&str> = output
        .stderr
        .lines()
        .filter(|line| line.starts_with("[tool file_text_stats] ") && line.contains(" of 880000 "))
        .collect();
    // A report every ~64 KiB counted: the first after one piece, the last at the end.
    assert!(progress.len() >= 2, "{}", output.stderr);
    assert!(
        progress[0].starts_with("[tool file_text_stats] 65")
            && progress[0].contains("words counted"),
        "{progress:?}"
    );
    assert_eq!(
        progress.last(),
        Some(&"[tool file_text_stats] 880000 of 880000 180000 words counted")
    );
    assert!(
        output
            .stderr
            .contains("[tool file_text_stats] info: read 880000 bytes from /data/large.txt\n"),
        "{}",
        output.stderr
    );
}
