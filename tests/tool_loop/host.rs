//! A `Host` built from a manifest runs the loop with the manifest's settings: what an
//! embedding application gets without re-creating the `host` command's policy.

use toolhost::agent::RunEnd;
use toolhost::{Host, HostError};
use toolhost_tests::cli::{ManifestFile, model_table};
use toolhost_tests::error::assert_error_chain_contains;
use toolhost_tests::model::{Format, ScriptedModel, call, calls, text};
use toolhost_tests::runtime;

/// The calculator, and `extra` after it, as a `Host` of the tests' runtime. The manifest's
/// directory is kept as long as the host.
async fn host(extra: &str) -> (ManifestFile, Result<Host, HostError>) {
    let manifest = ManifestFile::calculator(extra);
    let host = Host::builder()
        .runtime(runtime())
        .manifest(manifest.path())
        .build()
        .await;
    (manifest, host)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manifests_settings_reach_every_request() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let model = ScriptedModel::start(
            format,
            vec![
                calls(vec![call("c1", "add", r#"{"a": 2, "b": 2}"#)]),
                text("It is 4."),
            ],
        )
        .await;
        let provider = match format {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
        };
        let (_manifest, host) = host(&format!(
            "[model]\nprovider = \"{provider}\"\nbase_url = {:?}\napi_key = \"test-key\"\n\
             temperature = 0.25\nmax_tokens = 77\nsystem = \"Be brief.\"\nstream = false\n",
            model.base_url()
        ))
        .await;
        let host = host.unwrap();
        let result = host.run("What is 2+2?").await.unwrap();
        assert_eq!(result.text, "It is 4.");
        for body in model.bodies() {
            assert_eq!(body["temperature"], 0.25, "{format:?}: {body}");
            assert_eq!(body["max_tokens"], 77, "{format:?}: {body}");
            assert!(body.get("stream").is_none(), "{format:?}: {body}");
            let system = match format {
                Format::OpenAi => body["messages"][0]["content"].clone(),
                Format::Anthropic => body["system"].clone(),
            };
            assert_eq!(system, "Be brief.", "{format:?}: {body}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_return_direct_tool_of_the_manifest_ends_the_run() {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![calls(vec![call("c1", "square_root", r#"{"x": 16}"#)])],
    )
    .await;
    let (_manifest, host) = host(&format!(
        "{}\n[tools.square_root]\nreturn_direct = true\n",
        model_table(&model)
    ))
    .await;
    let host = host.unwrap();
    let result = host.run("sqrt 16").await.unwrap();
    assert_eq!(result.end, RunEnd::ReturnDirect);
    assert_eq!(result.text, "4.0");
    assert_eq!(model.bodies().len(), 1, "no second model request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manifests_approval_error_stop_and_audit_settings_apply() {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("c1", "multiply", r#"{"a": 6, "b": 7}"#)]),
            calls(vec![call("c2", "add", r#"{"a": 1, "b": 1}"#)]),
        ],
    )
    .await;
    let (manifest, host) = host(&format!(
        "{}stop_at = [\"multiply\"]\nmax_parallel_calls = 2\n\n\
         [tools.add]\napproval = \"always\"\n\n\
         [tools.square_root]\non_error = \"fail_run\"\napproval = \"never\"\n\n\
         [approval]\nask_for = [\"unsandboxed\", \"write-dir\"]\n\n\
         [audit]\npath = \"logs.jsonl\"\n",
        model_table(&model)
    ))
    .await;
    let host = host.unwrap();
    let options = host.agent_options();
    assert!(options.stop_at.contains("multiply"));
    assert_eq!(options.max_parallel_calls.map(|n| n.get()), Some(2));
    assert!(options.fail_run.contains("square_root"));
    assert_eq!(
        options.approval.tools.get("add"),
        Some(&toolhost::agent::ApprovalMode::Always)
    );
    assert_eq!(options.approval.ask_for.len(), 2);
    let audit = manifest.dir().join("logs.jsonl");
    assert_eq!(host.audit_log().unwrap().path(), audit);

    // multiply is a stop_at tool: its result is the answer.
    let result = host.run("6*7").await.unwrap();
    assert_eq!(
        (result.text.as_str(), result.end),
        ("42.0", RunEnd::ReturnDirect)
    );
    // add needs approval, and Host::run has no one to ask.
    let error = host.run("1+1").await.unwrap_err();
    assert!(
        matches!(error, toolhost::agent::AgentError::ApprovalNeeded { ref tool } if tool == "add"),
        "{error}"
    );
    assert_error_chain_contains(&error, "Host::agent");
    let lines = std::fs::read_to_string(&audit).unwrap();
    assert_eq!(lines.lines().count(), 1, "{lines}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_at_tool_that_is_not_loaded_is_an_error_that_names_it() {
    let (_manifest, host) = host("[model]\nstop_at = [\"divide\"]\n").await;
    let error = host.err().unwrap();
    assert_error_chain_contains(&error, "stop_at names `divide`");
    assert_error_chain_contains(&error, "square_root");
}
