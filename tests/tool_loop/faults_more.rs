//! What a hostile model server could do before (issue 26, findings 8, 9 and 12), each refused
//! now: panics on a server's header or index, runs that never end, turns of endless calls,
//! error bodies of any size, and `--model` dropping the manifest's timeout and retries. Each
//! test drives the real `host` binary (or the library, where the user is an embedder) against
//! real servers on 127.0.0.1, and bounds its own wait, so that what used to hang fails
//! instead. Paths, manifests and grants are in `refusals.rs`.

use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use toolhost::agent::{AgentOptions, RunOptions};
use toolhost::llm::ProviderError;
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::model::{Call, Format, ScriptedModel, Turn, calls, text};

use super::{ask, scripted};
use toolhost_tests::cli::host_command as host;

/// How long any one `host` command may take here before the test calls it hung.
pub(super) const HANG: Duration = Duration::from_secs(40);

/// Runs `command`, killing it after [`HANG`]: `None` when it had to be killed.
pub(super) async fn bounded(mut command: Command) -> (Option<Output>, Duration) {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let child = command.spawn().unwrap();
    let pid = child.id();
    let waiting = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap());
    match tokio::time::timeout(HANG, waiting).await {
        Ok(output) => (Some(output.unwrap()), started.elapsed()),
        Err(_) => {
            // The child this test started, by its id.
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            (None, started.elapsed())
        }
    }
}

/// The command's stderr, once it ended on its own (not by a panic's exit status 101).
pub(super) fn ended_without_panic(output: Option<Output>, what: &str) -> (i32, String) {
    let output = output.unwrap_or_else(|| panic!("{what}: still running after {HANG:?}"));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let code = output.status.code().unwrap_or(-1);
    assert_ne!(code, 101, "{what}: the host panicked:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    (code, stderr)
}

/// A manifest with the calculator and `extra` (TOML) after it, in a temporary directory.
pub(super) fn manifest(extra: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolhost.toml");
    std::fs::write(
        &path,
        format!("[components.calculator]\npath = {CALCULATOR:?}\n{extra}"),
    )
    .unwrap();
    let path = path.to_str().unwrap().to_owned();
    (dir, path)
}

/// `host run` against the model at `base_url` of `format`, named with `--model`.
fn run_with_model(manifest: &str, format: Format, base_url: &str) -> Command {
    let provider = match format {
        Format::OpenAi => "openai:scripted",
        Format::Anthropic => "anthropic:scripted",
    };
    let mut command = host();
    command.args([
        "run",
        "-m",
        manifest,
        "--model",
        provider,
        "--base-url",
        base_url,
        "hi",
    ]);
    command
}

fn rate_limited(headers: &[(&str, &str)]) -> Turn {
    Turn::Error {
        status: 429,
        message: "slow down".into(),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    }
}

// Finding 8: panics on a model server's answer.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_beyond_any_duration_is_an_error_not_a_panic() {
    let (_dir, manifest) = manifest("");
    for format in [Format::OpenAi, Format::Anthropic] {
        for header in [
            ("retry-after", "inf"),
            ("retry-after", "1e20"),
            ("retry-after-ms", "1e30"),
        ] {
            let model = ScriptedModel::start(format, vec![rate_limited(&[header])]).await;
            let what = format!("{format:?} {}: {}", header.0, header.1);
            let (output, _) = bounded(run_with_model(&manifest, format, &model.base_url())).await;
            let (code, stderr) = ended_without_panic(output, &what);
            assert_ne!(code, 0, "{what}: {stderr}");
            assert!(
                stderr.contains(
                    "answered 429 and asked (Retry-After) for a wait of an unreadable length"
                ),
                "{what}: {stderr}"
            );
            assert_eq!(model.requests().len(), 1, "{what}: no retry");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_tool_call_index_at_the_top_of_the_range_is_an_error_not_a_panic() {
    let chunk = |delta: serde_json::Value| {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        )
    };
    let body = [
        chunk(
            json!({"tool_calls": [{"index": u64::MAX, "id": "a", "type": "function",
            "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]}),
        ),
        chunk(json!({"tool_calls": [{"id": "b", "type": "function",
            "function": {"name": "add", "arguments": "{\"a\": 3, \"b\": 4}"}}]})),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![Turn::Raw {
            content_type: "text/event-stream".into(),
            body: body.into_bytes(),
        }],
    )
    .await;
    let (_dir, manifest) = manifest("");
    let (output, _) = bounded(run_with_model(&manifest, Format::OpenAi, &model.base_url())).await;
    let (code, stderr) = ended_without_panic(output, "index 2^64-1");
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("follows the call with index 18446744073709551615, the largest there is"),
        "{stderr}"
    );
}

// Finding 9: runs that never end.

/// What a hostile model server does once it has read a request.
#[derive(Clone)]
enum Hostile {
    /// Sends nothing at all, and keeps the connection open.
    Silent,
    /// Answers 200 with an event stream and sends `piece` every 50 ms, forever.
    Forever(&'static str),
    /// Answers 200 with an event stream and sends one line that never ends, as fast as it can.
    EndlessLine,
    /// Answers `status` with a JSON error body of `size` bytes, counting what it could send.
    LargeError { size: usize, sent: Arc<AtomicUsize> },
}

/// A raw HTTP/1.1 server on 127.0.0.1 behaving as `behaviour` for every connection; its base
/// URL (with `/v1` for the OpenAI format).
async fn hostile(behaviour: Hostile) -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let behaviour = behaviour.clone();
            tokio::spawn(async move {
                let mut request = vec![0; 64 * 1024];
                let _ = stream.read(&mut request).await;
                let chunked = |data: &[u8]| {
                    let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
                    chunk.extend_from_slice(data);
                    chunk.extend_from_slice(b"\r\n");
                    chunk
                };
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            transfer-encoding: chunked\r\n\r\n";
                match behaviour {
                    Hostile::Silent => tokio::time::sleep(Duration::from_secs(3600)).await,
                    Hostile::Forever(piece) => {
                        let _ = stream.write_all(head.as_bytes()).await;
                        while stream.write_all(&chunked(piece.as_bytes())).await.is_ok() {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                    Hostile::EndlessLine => {
                        let _ = stream.write_all(head.as_bytes()).await;
                        let _ = stream.write_all(&chunked(b"data: {\"choices\": \"")).await;
                        let piece = chunked(&[b'a'; 64 * 1024]);
                        while stream.write_all(&piece).await.is_ok() {}
                    }
                    Hostile::LargeError { size, sent } => {
                        let opening = br#"{"error": {"message": ""#;
                        let closing = br#""}}"#;
                        let head = format!(
                            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: \
                             application/json\r\ncontent-length: {size}\r\n\r\n"
                        );
                        let _ = stream.write_all(head.as_bytes()).await;
                        let _ = stream.write_all(opening).await;
                        let mut left = size - opening.len() - closing.len();
                        let piece = [b'x'; 64 * 1024];
                        while left > 0 {
                            let n = left.min(piece.len());
                            if stream.write_all(&piece[..n]).await.is_err() {
                                return;
                            }
                            sent.fetch_add(n, Ordering::SeqCst);
                            left -= n;
                        }
                        let _ = stream.write_all(closing).await;
                    }
                }
            });
        }
    });
    (url, task)
}

/// A manifest whose `[model]` is the server at `url` in `format`, with `settings`.
fn model_manifest(format: Format, url: &str, settings: &str) -> (tempfile::TempDir, String) {
    let (provider, base_url) = match format {
        Format::OpenAi => ("openai", format!("{url}/v1")),
        Format::Anthropic => ("anthropic", url.to_owned()),
    };
    manifest(&format!(
        "[model]\nprovider = \"{provider}\"\nname = \"hostile\"\nbase_url = \"{base_url}\"\n\
         {settings}\n"
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_of_nothing_but_pings_ends_at_the_models_timeout() {
    let cases = [
        (Format::OpenAi, ": keep-alive\n\n"),
        (
            Format::OpenAi,
            "data: {\"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": null}]}\n\n",
        ),
        (
            Format::Anthropic,
            "event: ping\ndata: {\"type\": \"ping\"}\n\n",
        ),
    ];
    for (format, piece) in cases {
        let (url, _server) = hostile(Hostile::Forever(piece)).await;
        let (_dir, manifest) = model_manifest(format, &url, "timeout = \"2s\"\nmax_retries = 0");
        let mut command = host();
        command.args(["run", "-m", &manifest, "hi"]);
        let (output, took) = bounded(command).await;
        let what = format!("{format:?} sending {piece:?} forever");
        let (code, stderr) = ended_without_panic(output, &what);
        assert_ne!(code, 0, "{what}: {stderr}");
        // The idle limit and the whole answer's are both 2 s: either may be the first to end
        // it, and both name the setting.
        assert!(
            stderr.contains("sent nothing for 2s in the middle of a streamed answer")
                || stderr.contains("did not answer within 2s"),
            "{what}: {stderr}"
        );
        assert!(
            stderr.contains("raise `timeout` in the manifest's [model] section"),
            "{what}: {stderr}"
        );
        assert!(took < Duration::from_secs(20), "{what}: took {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_do_not_keep_a_stream_alive() {
    for (format, piece) in [
        (Format::OpenAi, ": keep-alive\n\n"),
        (
            Format::Anthropic,
            "event: ping\ndata: {\"type\": \"ping\"}\n\n",
        ),
    ] {
        let (url, _server) = hostile(Hostile::Forever(piece)).await;
        let base_url = match format {
            Format::OpenAi => format!("{url}/v1"),
            Format::Anthropic => url,
        };
        let options = toolhost::llm::HttpOptions {
            idle_timeout: Duration::from_millis(500),
            max_retries: 0,
            ..super::http_options()
        };
        let agent = toolhost::agent::Agent::new(
            super::provider(format, &base_url, options),
            super::toolbox().await,
            AgentOptions::default(),
        );
        let started = Instant::now();
        let (result, _) = tokio::time::timeout(HANG, ask(&agent, "hi", &RunOptions::default()))
            .await
            .expect("the run ends");
        let error = match result {
            Err(toolhost::agent::AgentError::Provider(error)) => error,
            other => panic!("expected a provider error, got {other:?}"),
        };
        assert!(
            matches!(error, ProviderError::Timeout { stalled: true, .. }),
            "{format:?}: {error}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{format:?}: the 20 s timeout ended it, not the idle one"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_never_ends_is_cut_at_the_answer_size_limit() {
    let (url, _server) = hostile(Hostile::EndlessLine).await;
    let (_dir, manifest) = model_manifest(Format::OpenAi, &url, "timeout = \"30s\"");
    let mut command = host();
    command.args(["run", "-m", &manifest, "hi"]);
    let (output, took) = bounded(command).await;
    let (code, stderr) = ended_without_panic(output, "an endless line");
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("sent a stream event larger than 16 MiB and it was not read further"),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(25), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_keeps_no_one_waiting_past_the_manifests_timeout() {
    let (url, _server) = hostile(Hostile::Silent).await;
    // The manifest names the local model; `--model` switches to the hostile server, and the
    // manifest's timeout and retries still apply (the README says only the URL, key and
    // name are replaced).
    let (_dir, manifest) = manifest("[model]\ntimeout = \"2s\"\nmax_retries = 0\n");
    let (output, took) = bounded(run_with_model(
        &manifest,
        Format::OpenAi,
        &format!("{url}/v1"),
    ))
    .await;
    let (code, stderr) = ended_without_panic(output, "a silent server");
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("did not answer within 2s"), "{stderr}");
    assert!(took < Duration::from_secs(15), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_past_the_timeout_fails_at_once_naming_it() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let model =
            ScriptedModel::start(format, vec![rate_limited(&[("retry-after", "3600")])]).await;
        let (_dir, manifest) = manifest("[model]\ntimeout = \"5s\"\n");
        let (output, took) = bounded(run_with_model(&manifest, format, &model.base_url())).await;
        let (code, stderr) = ended_without_panic(output, "Retry-After: 3600");
        assert_ne!(code, 0, "{stderr}");
        assert!(
            stderr.contains(
                "answered 429 and asked (Retry-After) for a wait of 1h, longer than the 5s \
                 toolhost waits before a retry"
            ),
            "{stderr}"
        );
        assert!(took < Duration::from_secs(10), "{format:?}: took {took:?}");
        assert_eq!(model.requests().len(), 1);
    }
}

// Finding 12: --model, calls per turn, error bodies.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_flag_keeps_the_manifests_retries() {
    let errors = (0..4)
        .map(|_| Turn::Error {
            status: 503,
            message: "overloaded".into(),
            headers: Vec::new(),
        })
        .collect();
    let model = ScriptedModel::start(Format::OpenAi, errors).await;
    let (_dir, manifest) = manifest("[model]\nmax_retries = 0\n");
    let (output, _) = bounded(run_with_model(&manifest, Format::OpenAi, &model.base_url())).await;
    let (code, stderr) = ended_without_panic(output, "max_retries = 0");
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("answered 503: overloaded"), "{stderr}");
    assert_eq!(model.requests().len(), 1, "no retry: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_of_too_many_calls_runs_only_the_first_32() {
    let many: Vec<Call> = (0..40)
        .map(|i| {
            toolhost_tests::model::call(
                &format!("c{i}"),
                "add",
                &format!(r#"{{"a": {i}, "b": 1}}"#),
            )
        })
        .collect();
    let turns = vec![calls(many), text("done")];
    let (model, agent) = scripted(Format::OpenAi, false, turns, AgentOptions::default()).await;
    let (result, _) = ask(&agent, "add them", &RunOptions::default()).await;
    let result = result.unwrap();
    assert_eq!(result.text, "done");
    assert_eq!(result.executions.len(), 32, "the first 32 ran");
    assert_eq!(result.invalid_calls.len(), 8);
    for invalid in &result.invalid_calls {
        assert_eq!(json!(invalid.problem), "too_many_calls", "{invalid:?}");
    }
    let second = &model.bodies()[1];
    let results: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), 40, "every call gets a result");
    assert_eq!(results[0], "1.0");
    assert!(
        results[39]
            .starts_with("Not run: one turn may make at most 32 tool calls, and this was call 40."),
        "{}",
        results[39]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_error_body_is_read_only_in_part() {
    let sent = Arc::new(AtomicUsize::new(0));
    let size = 50 << 20;
    let (url, _server) = hostile(Hostile::LargeError {
        size,
        sent: sent.clone(),
    })
    .await;
    let options = toolhost::llm::HttpOptions {
        max_retries: 0,
        ..super::http_options()
    };
    let agent = toolhost::agent::Agent::new(
        super::provider(Format::OpenAi, &format!("{url}/v1"), options),
        super::toolbox().await,
        AgentOptions::default(),
    );
    let (result, _) = tokio::time::timeout(HANG, ask(&agent, "hi", &RunOptions::default()))
        .await
        .expect("the error comes back");
    let error = match result {
        Err(toolhost::agent::AgentError::Provider(error)) => error,
        other => panic!("expected a provider error, got {other:?}"),
    };
    assert!(
        matches!(error, ProviderError::Status { status: 500, .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(
        message.len() < 1000,
        "the error is {} bytes long",
        message.len()
    );
    // Give the server a moment to notice the closed connection.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = sent.load(Ordering::SeqCst);
    assert!(
        sent < size / 2,
        "the whole body was read: {sent} of {size} bytes sent"
    );
}
