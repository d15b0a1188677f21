//! `host run` and `host chat` as a user runs them: against the scripted model, and with the
//! local model's server started and stopped by the host.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use toolhost_tests::cli::{HostCommand, HostOutput, ManifestFile};
use toolhost_tests::model::{Format, ScriptedModel, call, calls, text};
use toolhost_tests::snapshot::render;

/// `host run "What is 2+40?"` with the calculator, against a model that calls `add` and then
/// answers; the manifest is returned for its directory.
async fn run_what_is_2_plus_40() -> (HostOutput, ManifestFile) {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("c1", "add", r#"{"a": 2, "b": 40}"#)]),
            text("It is 42."),
        ],
    )
    .await;
    let manifest = ManifestFile::calculator("");
    let out = HostCommand::new("run")
        .manifest(&manifest)
        .model(&model)
        .arg("What is 2+40?")
        .run()
        .await;
    (out, manifest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_streams_the_answer_and_shows_tool_activity_apart() {
    let (out, _manifest) = run_what_is_2_plus_40().await;
    out.assert_success();
    assert_eq!(out.stdout, "It is 42.\n", "only the answer is on stdout");
    let stderr = &out.stderr;
    assert!(stderr.contains(r#"→ add {"a": 2, "b": 40}"#), "{stderr}");
    assert!(stderr.contains("← add 42.0"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_json_reports_the_whole_run() {
    let model = ScriptedModel::start(
        Format::Anthropic,
        vec![
            calls(vec![call("t1", "square_root", r#"{"x": 475695037565}"#)]),
            text("About 689706.49."),
        ],
    )
    .await;
    let out = HostCommand::new("run")
        .manifest(&ManifestFile::calculator(""))
        .model(&model)
        .args(["--json", "sqrt?"])
        .run()
        .await;
    out.assert_success();
    let output = out.json();
    assert_eq!(output["ok"], true);
    let result = &output["result"];
    assert_eq!(result["text"], "About 689706.49.");
    assert_eq!(result["end"], "answered");
    assert_eq!(result["rounds"], 2);
    let execution = &result["executions"][0];
    assert_eq!(execution["name"], "square_root");
    let arguments: serde_json::Value =
        serde_json::from_str(execution["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, serde_json::json!({"x": 475695037565u64}));
    assert_eq!(execution["output"], "689706.4865324959");
    assert_eq!(execution["outcome"]["status"], "ok");
    assert!(execution["duration_ms"].as_f64().unwrap() > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_api_key_names_the_variable() {
    let out = HostCommand::new("run")
        .manifest(&ManifestFile::calculator(""))
        .args(["--model", "anthropic:claude-sonnet-4-5", "hi"])
        .env_remove("ANTHROPIC_API_KEY")
        .run()
        .await;
    assert_eq!(out.code(), Some(2));
    assert!(out.stderr.contains("ANTHROPIC_API_KEY"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_keeps_the_conversation() {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![text("Hello, Ada."), text("You are Ada.")],
    )
    .await;
    let out = HostCommand::new("chat")
        .manifest(&ManifestFile::calculator(""))
        .model(&model)
        .stdin("I am Ada.\nWho am I?\n/exit\n")
        .run()
        .await;
    out.assert_success();
    assert_eq!(out.stdout, "Hello, Ada.\nYou are Ada.\n");
    let second = &model.bodies()[1];
    let said: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        said,
        ["I am Ada.", "Hello, Ada.", "Who am I?"],
        "the second turn carries the first"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_local_server_the_error_says_to_run_setup() {
    let out = HostCommand::new("run")
        .manifest(&ManifestFile::calculator(""))
        .arg("hi")
        .env("TOOLHOST_LLAMA_SERVER", "/nonexistent/llama-server")
        .run()
        .await;
    assert_eq!(out.code(), Some(2));
    let stderr = &out.stderr;
    assert!(
        stderr.contains("/nonexistent/llama-server") && stderr.contains("just setup"),
        "{stderr}"
    );
}

/// The llama-server processes whose parent is `pid`.
fn llama_children(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // pid (comm) state ppid ...
        let Some(after_comm) = stat.rsplit_once(") ") else {
            continue;
        };
        let parent: Option<u32> = after_comm
            .1
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok());
        if parent == Some(pid) && stat.contains("(llama-server)") {
            children.push(child);
        }
    }
    children
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_local_model_server() {
    let manifest = ManifestFile::calculator("");
    let mut command = HostCommand::new("chat").manifest(&manifest).into_command();
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let pid = child.id();
    let started = Instant::now();
    let server = loop {
        if let Some(&server) = llama_children(pid).first() {
            break server;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no llama-server started"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "host chat exited early"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Ctrl-C, as a terminal sends it to the host.
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stopped = Instant::now();
    while alive(server) {
        assert!(
            stopped.elapsed() < Duration::from_secs(10),
            "llama-server {server} outlived the host"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_output_is_pinned() {
    let (out, manifest) = run_what_is_2_plus_40().await;
    insta::assert_snapshot!(render(&out, &[(manifest.dir(), "[DIR]")]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_prints_a_json_error_with_the_calls_made() {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("c1", "add", r#"{"a": 1, "b": 1}"#)]),
            calls(vec![call("c2", "add", r#"{"a": 2, "b": 2}"#)]),
        ],
    )
    .await;
    let manifest = ManifestFile::calculator("");
    let out = HostCommand::new("run")
        .manifest(&manifest)
        .model(&model)
        .args(["--max-rounds", "2", "--json", "Count up."])
        .run()
        .await;
    let value = out.json();
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["kind"], "round_limit");
    assert_eq!(value["executions"].as_array().unwrap().len(), 2);
    insta::assert_snapshot!(render(&out, &[(manifest.dir(), "[DIR]")]));
}
