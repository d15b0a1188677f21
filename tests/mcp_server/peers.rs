//! Real MCP peers from the registries: the official conformance suite (Node) against
//! `host mcp --http`, and the Python SDK's client against `host mcp` on stdio.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Value, json};
use toolhost_tests::cli::{HostCommand, ManifestFile};
use toolhost_tests::components::{MCP_CONFORMANCE, MCP_CONFORMANCE_PY};
use toolhost_tests::mcp::{HttpServer, StdioServer, peers};
use toolhost_tests::{host_binary, repo_root, scripted, target_dir};

/// The scenarios issue 8 requires to pass.
const MUST_PASS: [&str; 32] = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-with-logging",
    "tools-call-error",
    // Tool contract 0.2: content parts, progress, resources, prompts, completion.
    "completion-complete",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "json-schema-2020-12",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

/// The tools the Python conformance guest serves: what a result holds (images, audio, embedded
/// resources) and what a tool reports while it runs (progress, log lines).
const SERVED_BY_PYTHON: [&str; 6] = [
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_progress",
    "test_logging_tool",
];

/// The manifest the suite runs against: the conformance guests in Python
/// (tests/guests/mcp-conformance-py) and in Rust (tests/guests/mcp-conformance). Both describe
/// the same tools, resources and prompts; a manifest offers a tool name once, so the Python one
/// serves [`SERVED_BY_PYTHON`] and the Rust one the other tools; the resources and prompts
/// are the Python one's (the Rust one is given `resources = []` and `prompts = []`). The
/// suite's hook `test_trigger_tool_change` is an MCP server's whose tools really change
/// (tests/mcp-peers/changing_server.py): the host lists them again and tells the listeners.
pub(crate) fn conformance_manifest() -> ManifestFile {
    static CHECKED: OnceLock<()> = OnceLock::new();
    let python = scripted(MCP_CONFORMANCE_PY);
    let manifest = ManifestFile::new(&format!(
        "[components.conformance-python]\npath = {python:?}\ntools = {SERVED_BY_PYTHON:?}\n\n\
         [components.conformance-rust]\npath = {MCP_CONFORMANCE:?}\nexclude = {SERVED_BY_PYTHON:?}\n\
         resources = []\nprompts = []\n\n{}\n{}",
        super::changes::changing_manifest_entry(),
        super::tasks::TASK_TOOLS_MANIFEST,
    ));
    CHECKED.get_or_init(|| check_split(&manifest));
    manifest
}

/// `host tools` on the conformance manifest: both guests describe the same tools, and each
/// offers its share. It compiles the components too, as a deployment would: once, for the
/// tests here (the other waits), so their servers start from the compile cache.
fn check_split(manifest: &ManifestFile) {
    let out = HostCommand::new("tools")
        .arg(manifest.arg())
        .arg("--json")
        .run_blocking();
    out.assert_success();
    let listed: Value = serde_json::from_str(&out.stdout).unwrap();
    let names = |component: &Value, key: &str| -> Vec<String> {
        let names = component[key].as_array().unwrap().iter();
        names
            .map(|t| t["name"].as_str().or(t.as_str()).unwrap().to_owned())
            .collect()
    };
    let [python, rust] = [0, 1].map(|i| listed["components"][i].clone());
    assert_eq!(python["name"], "conformance-python", "{listed}");
    // The tools of the tasks scenarios are the Rust guest's only.
    let rust_tools = names(&rust, "tools");
    let shared: Vec<String> = (rust_tools.iter())
        .filter(|name| !super::tasks::TASK_TOOLS.contains(&name.as_str()))
        .cloned()
        .collect();
    assert_eq!(
        names(&python, "tools"),
        shared,
        "the two guests describe the same tools, but for the tasks scenarios'"
    );
    assert_eq!(names(&python, "offered"), SERVED_BY_PYTHON);
    assert_eq!(
        names(&rust, "offered").len(),
        names(&rust, "tools").len() - SERVED_BY_PYTHON.len()
    );
}

/// `tests/mcp_server/conformance-baseline.yml`: scenario, reason.
fn baseline() -> (std::path::PathBuf, Vec<(String, String)>) {
    baseline_in("conformance-baseline.yml")
}

/// A baseline file of `tests/mcp_server/`: scenario, reason.
pub(crate) fn baseline_in(file: &str) -> (std::path::PathBuf, Vec<(String, String)>) {
    let path = repo_root().join("tests/mcp_server").join(file);
    let entries = toolhost_tests::mcp::baseline_entries(&path);
    (path, entries)
}

/// Runs the suite (`suite`: its entry point and arguments) against `server` with `baseline`
/// as its expected failures; fails the test unless it passes. Returns its output and the
/// checks of every scenario.
pub(crate) async fn run_suite(
    peers: &toolhost_tests::mcp::Peers,
    suite: &[&std::ffi::OsStr],
    baseline: &Path,
    server: &HttpServer,
) -> (String, BTreeMap<String, Vec<Value>>) {
    let out = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(&peers.node24)
        .args(suite)
        .args(["--url", &server.url])
        .arg("--expected-failures")
        .arg(baseline)
        .arg("-o")
        .arg(out.path())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let checks = checks(out.path());
    // The summary names the scenarios only: the checks that failed, with their details.
    let failed: Vec<&Value> = (checks.values().flatten())
        .filter(|check| check["status"] == "FAILURE" || check["status"] == "WARNING")
        .collect();
    assert!(
        output.status.success(),
        "the conformance suite ({:?}) failed:\n{stdout}\n{}\nfailed checks: {failed:#?}\n\
         server stderr:\n{}",
        suite,
        String::from_utf8_lossy(&output.stderr),
        server.stderr.text()
    );
    (stdout, checks)
}

/// The checks of every scenario in the suite's output directory, by scenario.
fn checks(out: &Path) -> BTreeMap<String, Vec<Value>> {
    // server-<scenario>-<ISO time with `-` for `:`>, e.g. ...-2026-11-23T07-03-01-009Z.
    let dir_name = regex::Regex::new(r"^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$").unwrap();
    let mut checks = BTreeMap::new();
    for entry in std::fs::read_dir(out).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let scenario = dir_name
            .captures(&name)
            .unwrap_or_else(|| panic!("unexpected output directory {name}"))[1]
            .to_owned();
        let file = std::fs::read_to_string(dir.join("checks.json")).unwrap();
        checks.insert(scenario, serde_json::from_str(&file).unwrap());
    }
    checks
}

#[tokio::test]
async fn the_official_conformance_suite_passes_but_for_the_baseline() {
    let peers = peers();
    let (baseline_file, baseline) = baseline();
    for (scenario, reason) in &baseline {
        assert!(
            !reason.is_empty(),
            "baseline entry {scenario} needs a reason"
        );
        assert!(
            !MUST_PASS.contains(&scenario.as_str()),
            "{scenario} must pass; it cannot be in the baseline"
        );
    }
    let manifest = conformance_manifest();
    let server = HttpServer::start(&[manifest.arg()], &[]).await;
    let suite = [
        peers.conformance.as_os_str(),
        "server".as_ref(),
        "--suite".as_ref(),
        "all".as_ref(),
    ];
    let (stdout, checks) = run_suite(&peers, &suite, &baseline_file, &server).await;
    for scenario in MUST_PASS {
        let results = checks
            .get(scenario)
            .unwrap_or_else(|| panic!("{scenario} did not run: {stdout}"));
        assert!(
            results.iter().any(|check| check["status"] == "SUCCESS"),
            "{scenario}: {results:?}"
        );
        for check in results {
            let status = check["status"].as_str().unwrap();
            assert!(
                status == "SUCCESS" || status == "INFO",
                "{scenario}: {check}"
            );
        }
    }
    for (scenario, _) in &baseline {
        assert!(checks.contains_key(scenario), "{scenario} did not run");
    }

    // The suite's checks are weak (any text passes): the exact answers.
    let details = |scenario: &str| checks[scenario][0]["details"].clone();
    let simple = details("tools-call-simple-text");
    assert_eq!(
        simple["result"],
        json!({
            "content": [{ "type": "text", "text": "This is a simple text response for testing." }],
            "isError": false,
        })
    );
    let error = details("tools-call-error");
    assert_eq!(
        error["result"],
        json!({
            "content": [{
                "type": "text",
                "text": "the tool failed: This tool intentionally returns an error for testing",
            }],
            "isError": true,
        })
    );
    let logging = details("tools-call-with-logging");
    assert_eq!(
        logging["logs"],
        json!([
            { "level": "info", "logger": "test_tool_with_logging", "data": "Tool execution started" },
            { "level": "info", "logger": "test_tool_with_logging", "data": "Tool processing data" },
            { "level": "info", "logger": "test_tool_with_logging", "data": "Tool execution completed" },
        ])
    );
    let schema: Vec<&str> = checks["json-schema-2020-12"]
        .iter()
        .map(|check| check["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        schema,
        [
            "JsonSchema2020_12ToolFound",
            "JsonSchema2020_12$Schema",
            "JsonSchema2020_12$Defs",
            "JsonSchema2020_12AdditionalProperties",
        ]
    );
}

/// Runs `mcp_client.py ARGS -- host --cache-dir ... mcp SERVER_ARGS` and returns what it
/// printed.
pub(super) async fn python_client(client_args: &[&str], server_args: &[&str]) -> Value {
    let peers = peers();
    let cache = target_dir().join("test-compile-cache");
    let output = tokio::process::Command::new(&peers.python)
        .arg(&peers.python_client)
        .args(client_args)
        .arg("--")
        .arg(host_binary())
        .arg("--cache-dir")
        .arg(&cache)
        .arg("mcp")
        .args(server_args)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{stderr}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// The example manifest, whose components `just tools` builds.
fn example_manifest() -> String {
    let dir = repo_root().join("example-tools");
    for name in [
        "calculator",
        "clock",
        "weather",
        "files",
        "text-python",
        "json-js",
        "checksum-c",
        "wordcount-go",
    ] {
        let wasm = dir.join("dist").join(format!("{name}.wasm"));
        assert!(
            wasm.exists(),
            "{} is missing: build the example tools with `just tools`",
            wasm.display()
        );
    }
    dir.join("toolhost.toml").display().to_string()
}

#[tokio::test]
async fn the_python_sdk_lists_the_example_tools_and_calls_square_root() {
    let manifest = example_manifest();
    for mode in ["legacy", "auto"] {
        // A cold compile cache compiles the Python and JavaScript components first.
        let printed = python_client(
            &[
                "--timeout",
                "600",
                "--mode",
                mode,
                "--call",
                "square_root",
                "--args",
                r#"{"x": 475695037565}"#,
            ],
            // Serving once every tool is loaded: the client lists them once, and a server
            // past its ready wait (a loaded machine) would list none yet.
            &[&manifest, "--ready-wait", "600s"],
        )
        .await;
        let expected_version = if mode == "legacy" {
            "2025-11-25"
        } else {
            "2026-07-28"
        };
        assert_eq!(printed["protocolVersion"], expected_version, "{printed}");
        assert_eq!(printed["server"]["name"], "toolhost");
        let names: Vec<&str> = printed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 21, "{names:?}");
        assert_eq!(&names[..3], ["add", "multiply", "square_root"]);
        let result = &printed["result"];
        assert_eq!(result["isError"], false, "{result}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.starts_with(r#"{"result":689706.486532"#), "{text}");
        assert_eq!(
            result["structuredContent"],
            json!({ "result": 689706.4865324959 })
        );
    }
}

/// A manifest's MCP servers are served too (not sandboxed by toolhost): server-everything's
/// image stays an image block, and its structured result stays `structuredContent`.
#[tokio::test]
async fn tools_taken_from_an_mcp_server_keep_their_images_and_structured_results() {
    let everything = toolhost_tests::peers::peers().everything_stdio();
    let manifest = ManifestFile::new(&format!(
        "[mcp_servers.everything]\ncommand = {everything:?}\n"
    ));
    let mut server = StdioServer::start(&[manifest.arg()]).await;

    let answer = server.call("get-tiny-image", json!({})).await;
    let content = answer["result"]["content"].as_array().unwrap();
    let images: Vec<&Value> = content.iter().filter(|b| b["type"] == "image").collect();
    assert_eq!(images.len(), 1, "{answer}");
    assert_eq!(images[0]["mimeType"], "image/png");
    assert!(
        images[0]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo"),
        "a PNG: {answer}"
    );
    assert!(!answer.to_string().contains("[image"), "{answer}");

    let answer = server
        .call("get-structured-content", json!({ "location": "Chicago" }))
        .await;
    let structured = &answer["result"]["structuredContent"];
    assert!(structured["temperature"].is_number(), "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(&serde_json::from_str::<Value>(text).unwrap(), structured);
}

/// The suite at 0.2.0-alpha.12 runs exactly what each revision requires: for 2026-07-28 (the
/// stateless revision, no `initialize`) and for 2025-11-25 (sessions), no scored failure but
/// those in the revision's baseline, each with its reason.
#[tokio::test]
async fn each_revision_has_no_scored_failure_but_its_baseline() {
    let peers = peers();
    let manifest = conformance_manifest();
    let server = HttpServer::start(&[manifest.arg()], &[]).await;
    for revision in ["2026-07-28", "2025-11-25"] {
        let (file, baseline) = baseline_in(&format!("conformance-{revision}.yml"));
        for (scenario, reason) in &baseline {
            assert!(!reason.is_empty(), "{revision}: {scenario} needs a reason");
        }
        let suite = [
            peers.conformance_next.as_os_str(),
            "server".as_ref(),
            "--requirements".as_ref(),
            revision.as_ref(),
        ];
        let (_, checks) = run_suite(&peers, &suite, &file, &server).await;
        // What the parts look like on the wire, beyond the suite's presence checks.
        let details = |scenario: &str| checks[scenario][0]["details"].clone();
        assert_eq!(details("tools-call-image")["mimeType"], "image/png");
        assert_eq!(details("tools-call-audio")["hasAudioContent"], true);
        assert_eq!(
            details("tools-call-embedded-resource")["resourceUri"],
            "test://embedded-resource"
        );
        assert_eq!(
            details("tools-call-mixed-content")["contentTypes"],
            json!(["text", "image", "resource"])
        );
        // Resources and prompts of a 0.2 component.
        assert_eq!(details("resources-read-text")["uri"], "test://static-text");
        assert_eq!(details("resources-read-binary")["hasBlob"], true);
        let templated = details("resources-templates-read");
        assert!(
            templated["content"]
                .as_str()
                .is_some_and(|c| c.contains("Data for ID: 123")),
            "{templated}"
        );
        let with_args = details("prompts-get-with-args");
        assert_eq!(
            with_args["messages"][0]["content"]["text"],
            "Prompt with arguments: arg1='testValue1', arg2='testValue2'"
        );
        let completed = details("completion-complete");
        assert_eq!(
            completed["result"]["completion"]["values"],
            json!(["test-value", "testing"])
        );
        let progress = details("tools-call-with-progress");
        assert_eq!(progress["progressCount"], 3, "{progress}");
        assert_eq!(
            progress["progressNotifications"][2]["progress"], 100,
            "{progress}"
        );
        let passed = |scenario: &str| {
            checks[scenario]
                .iter()
                .all(|check| check["status"] == "SUCCESS")
        };
        if revision == "2026-07-28" {
            // The suite's hook changed the upstream server's tools, and the listen stream heard.
            let changed = checks["server-stateless"]
                .iter()
                .find(|c| c["id"] == "sep-2575-server-sends-tools-list-changed-on-subscription")
                .unwrap_or_else(|| {
                    panic!(
                        "no tools/list_changed check: {:?}",
                        checks["server-stateless"]
                    )
                });
            assert_eq!(changed["status"], "SUCCESS", "{changed}");
            assert_eq!(
                changed["details"]["changeFrame"]["method"], "notifications/tools/list_changed",
                "{changed}"
            );
            // A prompt that asks for input, then is filled in with the answer (SEP-2322).
            let prompt = &checks["input-required-result-non-tool-request"];
            assert!(
                passed("input-required-result-non-tool-request"),
                "{prompt:?}"
            );
            let filled = prompt
                .iter()
                .find(|check| check["id"] == "sep-2322-non-tool-complete")
                .unwrap_or_else(|| panic!("no second round: {prompt:?}"));
            assert_eq!(
                filled["details"]["result"]["messages"][0]["content"]["text"],
                "Use this context: test context",
                "{filled}"
            );
        } else {
            for scenario in ["resources-subscribe", "resources-unsubscribe"] {
                assert!(passed(scenario), "{scenario}: {:?}", checks[scenario]);
            }
        }
    }
}
