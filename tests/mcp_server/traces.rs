//! Traces over OTLP/HTTP, received by a Python receiver that decodes them with the
//! OpenTelemetry project's own protobuf definitions (`tests/mcp-peers/otlp_receiver.py`, on
//! `opentelemetry-proto` from PyPI): one trace from an MCP client's `traceparent` through
//! `host mcp`'s `tools/call`, its tool call, and the upstream MCP server it reached (another
//! `host mcp`, exporting to the same receiver), each span's parent the one before, and its
//! listing of the upstream server's tools; and the trace context a tool granted HTTP and a
//! model request send.

use std::path::Path;

use serde_json::{Value, json};
use toolhost_tests::cli::{HostCommand, ManifestFile};
use toolhost_tests::components::{FILES, MISBEHAVE};
use toolhost_tests::mcp::{HttpServer, StdioServer};
use toolhost_tests::model::{Format, ScriptedModel, text};
use toolhost_tests::otlp::Receiver;
use toolhost_tests::server::{Reply, TestServer};

/// The client's trace and its span, as a client that traces its own requests sends them.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// Two `host mcp --http` exporting to one receiver: `front`, whose upstream MCP server is
/// `upstream` (the calculator, with `extra` in its manifest), called by a client that sends
/// its own trace context ([`TRACE`], [`CLIENT_SPAN`]).
struct Traced {
    _manifests: [ManifestFile; 2],
    _upstream: HttpServer,
    _front: HttpServer,
    client: toolhost_tests::mcp::HttpClient,
}

impl Traced {
    async fn start(receiver: &Receiver, extra: &str) -> Self {
        let otlp = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
            // Sent within a fifth of a second, not the default five.
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
            // Metrics every half second, not every minute.
            ("OTEL_METRIC_EXPORT_INTERVAL", "500"),
        ];
        let inner = ManifestFile::calculator(extra);
        let upstream = HttpServer::start(
            &[inner.arg()],
            &[otlp[0], otlp[1], otlp[2], ("OTEL_SERVICE_NAME", "upstream")],
        )
        .await;
        upstream.loaded().await;
        let outer = ManifestFile::new(&format!("[mcp_servers.up]\nurl = {:?}\n", upstream.url));
        let front = HttpServer::start(
            &[outer.arg()],
            &[otlp[0], otlp[1], otlp[2], ("OTEL_SERVICE_NAME", "front")],
        )
        .await;
        front.loaded().await;
        let mut client = front.client().await;
        client.headers.push((
            "traceparent".to_owned(),
            format!("00-{TRACE}-{CLIENT_SPAN}-01"),
        ));
        Self {
            _manifests: [inner, outer],
            _upstream: upstream,
            _front: front,
            client,
        }
    }

    async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.client.call(tool, arguments).await
    }
}

#[tokio::test]
async fn one_trace_runs_from_the_client_through_the_call_to_the_upstream_server() {
    let receiver = Receiver::start().await;
    let mut traced = Traced::start(&receiver, "").await;
    let answer = traced.call("square_root", json!({ "x": 9 })).await;
    assert_eq!(
        answer["result"]["structuredContent"]["result"], 3.0,
        "{answer}"
    );

    // front: tools/call (server) <- execute_tool <- tools/call (client);
    // upstream: tools/call (server) <- execute_tool.
    let front_server = receiver
        .span(|s| {
            s["service"] == "front" && s["name"] == "tools/call square_root" && s["kind"] == 2
        })
        .await;
    assert_eq!(front_server["trace_id"], TRACE, "{front_server}");
    assert_eq!(
        front_server["parent_span_id"], CLIENT_SPAN,
        "{front_server}"
    );
    assert_eq!(front_server["attributes"]["mcp.method.name"], "tools/call");
    assert_eq!(
        front_server["attributes"]["gen_ai.tool.name"],
        "square_root"
    );
    let front_tool = receiver
        .span(|s| s["service"] == "front" && s["name"] == "execute_tool square_root")
        .await;
    assert_eq!(front_tool["parent_span_id"], front_server["span_id"]);
    let front_client = receiver
        .span(|s| {
            s["service"] == "front" && s["name"] == "tools/call square_root" && s["kind"] == 3
        })
        .await;
    assert_eq!(front_client["parent_span_id"], front_tool["span_id"]);
    let upstream_server = receiver
        .span(|s| {
            s["service"] == "upstream" && s["name"] == "tools/call square_root" && s["kind"] == 2
        })
        .await;
    assert_eq!(upstream_server["trace_id"], TRACE, "{upstream_server}");
    assert_eq!(upstream_server["parent_span_id"], front_client["span_id"]);
    let upstream_tool = receiver
        .span(|s| s["service"] == "upstream" && s["name"] == "execute_tool square_root")
        .await;
    assert_eq!(upstream_tool["parent_span_id"], upstream_server["span_id"]);
    // Listing the upstream server's tools is a client span too, whose trace context the
    // upstream server's span takes from `_meta`.
    let front_list = receiver
        .span(|s| s["service"] == "front" && s["name"] == "tools/list" && s["kind"] == 3)
        .await;
    let upstream_list = receiver
        .span(|s| {
            s["service"] == "upstream"
                && s["name"] == "tools/list"
                && s["kind"] == 2
                && s["parent_span_id"] == front_list["span_id"]
        })
        .await;
    assert_eq!(upstream_list["trace_id"], front_list["trace_id"]);
    assert_eq!(upstream_list["attributes"]["mcp.method.name"], "tools/list");
    // Every other request served is a span too.
    let initialize = receiver
        .span(|s| s["service"] == "front" && s["name"] == "initialize" && s["kind"] == 2)
        .await;
    assert_eq!(initialize["attributes"]["mcp.method.name"], "initialize");
    // The metrics go out over OTLP too.
    let pushed = receiver
        .span(|s| s["service"] == "upstream" && s["metric"] == "toolhost.tool.calls")
        .await;
    assert_eq!(pushed["metric"], "toolhost.tool.calls");
    // The sandbox's phases are the component call's events; its arguments are nowhere.
    let events = upstream_tool["events"].to_string();
    assert!(events.contains("calling the tool"), "{upstream_tool}");
    assert!(events.contains("the result checked"), "{upstream_tool}");
    assert!(
        !receiver.text().contains("\"x\": 9"),
        "no arguments in spans"
    );
}

#[tokio::test]
async fn a_malformed_or_oversized_traceparent_is_ignored() {
    let receiver = Receiver::start().await;
    let manifest = ManifestFile::calculator("");
    let server = HttpServer::start(
        &[manifest.arg()],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ],
    )
    .await;
    server.loaded().await;
    let mut client = server.client().await;
    let oversized = format!("00-{TRACE}-{CLIENT_SPAN}-01{}", "0".repeat(4096));
    for (n, bad) in ["00-not-a-trace", "garbage", &oversized]
        .into_iter()
        .enumerate()
    {
        client.headers = vec![("traceparent".to_owned(), bad.to_owned())];
        let meta = json!({ "traceparent": bad });
        let answer = client
            .request(
                "tools/call",
                json!({ "name": "add", "arguments": { "a": n, "b": 1 }, "_meta": meta }),
            )
            .await;
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let calls = receiver
        .spans_until(3, |s| s["name"] == "tools/call add")
        .await;
    for call in calls {
        assert_ne!(call["trace_id"], TRACE, "a new trace: {call}");
        assert_eq!(call["parent_span_id"], "", "a root: {call}");
    }
}

/// A call's arguments and result go on its `execute_tool` span only when the operator sets
/// the GenAI instrumentations' variable to `true`; by default the span has neither.
#[tokio::test]
async fn arguments_and_results_are_in_spans_only_when_the_operator_says() {
    let manifest = ManifestFile::calculator("");
    for capture in [false, true] {
        let receiver = Receiver::start().await;
        let mut env = vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ];
        if capture {
            env.push(("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"));
        }
        let server = HttpServer::start(&[manifest.arg()], &env).await;
        server.loaded().await;
        let mut client = server.client().await;
        let answer = client
            .request(
                "tools/call",
                json!({ "name": "add", "arguments": { "a": 20, "b": 22 } }),
            )
            .await;
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        let span = receiver.span(|s| s["name"] == "execute_tool add").await;
        let attributes = &span["attributes"];
        let arguments = attributes.get("gen_ai.tool.call.arguments");
        let result = attributes.get("gen_ai.tool.call.result");
        if capture {
            let arguments: Value =
                serde_json::from_str(arguments.and_then(Value::as_str).unwrap()).unwrap();
            assert_eq!(arguments, json!({ "a": 20, "b": 22 }), "{span}");
            let result = result.and_then(Value::as_str).unwrap_or_default();
            assert!(result.contains("42"), "{span}");
        } else {
            assert!(arguments.is_none() && result.is_none(), "{span}");
        }
    }
}

#[tokio::test]
async fn a_tool_granted_http_sends_the_calls_trace_context() {
    let receiver = Receiver::start().await;
    let site = TestServer::start(|_| Reply::text(200, "hello")).await;
    let manifest = ManifestFile::new(&format!(
        "[components.misbehave]\npath = {MISBEHAVE:?}\ngrants.http = [{:?}]\n",
        site.authority()
    ));
    let server = HttpServer::start(
        &[manifest.arg()],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "200"),
        ],
    )
    .await;
    server.loaded().await;
    let mut client = server.client().await;
    client.headers.push((
        "traceparent".to_owned(),
        format!("00-{TRACE}-{CLIENT_SPAN}-01"),
    ));
    let url = format!("{}/page", site.url());
    let answer = client.call("fetch", json!({ "address": url })).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let tool = receiver.span(|s| s["name"] == "execute_tool fetch").await;
    let requests = site.requests();
    let sent = requests[0]
        .header("traceparent")
        .expect("a traceparent header");
    assert_eq!(
        sent,
        format!("00-{TRACE}-{}-01", tool["span_id"].as_str().unwrap()),
        "the tool's request is a child of its call"
    );
}

#[tokio::test]
async fn a_model_request_carries_its_spans_trace_context() {
    let receiver = Receiver::start().await;
    let model = ScriptedModel::start(Format::OpenAi, vec![text("Hello.")]).await;
    let manifest = ManifestFile::calculator("");
    HostCommand::new("run")
        .manifest(&manifest)
        .model(&model)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .env("OTEL_SERVICE_NAME", "runner")
        .arg("Say hello.")
        .run()
        .await
        .assert_success();
    let chat = receiver.span(|s| s["name"] == "chat scripted").await;
    assert_eq!(chat["service"], "runner");
    assert_eq!(chat["kind"], 3, "a client span: {chat}");
    assert_eq!(chat["attributes"]["gen_ai.provider.name"], "openai");
    assert_eq!(chat["attributes"]["gen_ai.response.finish_reasons"], "stop");
    let run = receiver.span(|s| s["name"] == "invoke_agent").await;
    assert_eq!(run["trace_id"], chat["trace_id"]);
    let requests = model.requests();
    let sent = requests[0]
        .header("traceparent")
        .expect("a traceparent header");
    let (trace, span) = (chat["trace_id"].as_str(), chat["span_id"].as_str());
    assert_eq!(sent, format!("00-{}-{}-01", trace.unwrap(), span.unwrap()));
}

/// Over stdio every request rmcp handles is a span too, with its parent the trace context in
/// its `_meta`, and is timed in `mcp.server.operation.duration` under its method.
#[tokio::test]
async fn every_request_on_stdio_is_a_span_under_its_meta_traceparent() {
    let receiver = Receiver::start().await;
    // The files example offers resources as well as tools.
    let manifest = ManifestFile::in_dir(|dir| {
        std::fs::create_dir(dir.join("data")).unwrap();
        format!(
            "[components.files]\npath = {FILES:?}\n\
             grants.dirs = [{{ host = \"data\", guest = \"/data\" }}]\n"
        )
    });
    let endpoint = receiver.endpoint.clone();
    let mut server = StdioServer::start_with_env(
        &[manifest.arg()],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", Path::new(&endpoint)),
            ("OTEL_BSP_SCHEDULE_DELAY", Path::new("200")),
            ("OTEL_METRIC_EXPORT_INTERVAL", Path::new("500")),
            ("OTEL_SERVICE_NAME", Path::new("stdio")),
        ],
    )
    .await;
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    for method in ["tools/list", "resources/list"] {
        let answer = server
            .request(method, json!({ "_meta": { "traceparent": traceparent } }))
            .await;
        assert!(answer.get("result").is_some(), "{method}: {answer}");
    }
    // A request rmcp refuses is a span too, marked as an error.
    let refused = server
        .request("prompts/get", json!({ "name": "no-such-prompt" }))
        .await;
    assert!(refused.get("error").is_some(), "{refused}");
    for method in ["tools/list", "resources/list"] {
        let span = receiver
            .span(|s| s["service"] == "stdio" && s["name"] == method)
            .await;
        assert_eq!(span["kind"], 2, "a server span: {span}");
        assert_eq!(span["attributes"]["mcp.method.name"], method, "{span}");
        assert_eq!(span["trace_id"], TRACE, "{span}");
        assert_eq!(span["parent_span_id"], CLIENT_SPAN, "{span}");
        assert!(span["attributes"].get("error.type").is_none(), "{span}");
    }
    let initialize = receiver
        .span(|s| s["service"] == "stdio" && s["name"] == "initialize")
        .await;
    assert_eq!(initialize["parent_span_id"], "", "a root: {initialize}");
    let prompt = receiver
        .span(|s| s["service"] == "stdio" && s["name"] == "prompts/get")
        .await;
    let code = refused["error"]["code"].to_string();
    assert_eq!(prompt["attributes"]["error.type"], code, "{prompt}");
    assert_eq!(prompt["status"], 2, "an error status: {prompt}");
    // Each method's duration, under its name.
    let duration = receiver
        .span(|s| {
            s["service"] == "stdio"
                && s["metric"] == "mcp.server.operation.duration"
                && s["points"].as_array().is_some_and(|points| {
                    points
                        .iter()
                        .any(|p| p["mcp.method.name"] == "resources/list")
                })
        })
        .await;
    let points = duration["points"].as_array().unwrap();
    for method in ["initialize", "tools/list", "prompts/get"] {
        assert!(
            points.iter().any(|p| p["mcp.method.name"] == method),
            "{method}: {duration}"
        );
    }
}

#[tokio::test]
async fn a_stdio_server_pushes_its_metrics_and_spans() {
    let receiver = Receiver::start().await;
    let manifest = ManifestFile::calculator("");
    let endpoint = receiver.endpoint.clone();
    let mut server = StdioServer::start_with_env(
        &[manifest.arg()],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", Path::new(&endpoint)),
            ("OTEL_METRIC_EXPORT_INTERVAL", Path::new("500")),
            ("OTEL_SERVICE_NAME", Path::new("stdio")),
        ],
    )
    .await;
    let answer = server.call("add", json!({ "a": 1, "b": 2 })).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    receiver
        .span(|s| s["service"] == "stdio" && s["metric"] == "mcp.server.operation.duration")
        .await;
    server.close_stdin();
    // Its spans go out when it exits, if not before.
    let call = receiver
        .span(|s| s["service"] == "stdio" && s["name"] == "tools/call add")
        .await;
    assert_eq!(call["parent_span_id"], "", "a root: {call}");
}

/// A call the upstream server runs as a task is followed with `tasks/get`: each poll is a
/// client span under the call's, and the upstream server's `tasks/get` span takes it as its
/// parent from `_meta`, so the task's polls are in the caller's trace.
#[tokio::test]
async fn the_polls_of_an_upstream_task_are_spans_in_the_callers_trace() {
    let receiver = Receiver::start().await;
    let mut traced = Traced::start(&receiver, "[tools.square_root]\ntask = \"required\"\n").await;
    let answer = traced.call("square_root", json!({ "x": 16 })).await;
    assert_eq!(
        answer["result"]["structuredContent"]["result"], 4.0,
        "{answer}"
    );

    let front_call = receiver
        .span(|s| {
            s["service"] == "front" && s["name"] == "tools/call square_root" && s["kind"] == 3
        })
        .await;
    assert_eq!(front_call["trace_id"], TRACE, "{front_call}");
    let front_poll = receiver
        .span(|s| s["service"] == "front" && s["name"] == "tasks/get" && s["kind"] == 3)
        .await;
    assert_eq!(front_poll["trace_id"], TRACE, "{front_poll}");
    assert_eq!(front_poll["parent_span_id"], front_call["span_id"]);
    assert_eq!(front_poll["attributes"]["mcp.method.name"], "tasks/get");
    let upstream_poll = receiver
        .span(|s| {
            s["service"] == "upstream"
                && s["name"] == "tasks/get"
                && s["kind"] == 2
                && s["parent_span_id"] == front_poll["span_id"]
        })
        .await;
    assert_eq!(upstream_poll["trace_id"], TRACE, "{upstream_poll}");
}
