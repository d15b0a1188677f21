//! Callers over real HTTP: `host mcp`'s router and rmcp's service on 127.0.0.1, a real HTTP
//! client, and the application's own functions as tools. The HTTP front that verifies access
//! tokens is another part's; here a test-only front (compiled into unit tests only, never into
//! the library) attaches the `Caller` a request header describes, as that front attaches the
//! one a token proves.

use std::convert::Infallible;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::McpServer;
use super::http::mcp_service;
use super::options::HttpServerOptions;
use super::router::Router;
use crate::caller::Caller;
use crate::host::Host;
use crate::manifest::access::AccessRule;
use crate::manifest::{ApprovalMode, McpConfig};
use crate::native_tools::NativeTools;
use crate::source::CallContext;

/// The test header that describes a caller: `SUBJECT SCOPE,SCOPE GROUP,GROUP`.
const TEST_CALLER: &str = "x-test-caller";

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// A host with three tools (`whoami` says who the call's caller is), and access rules:
/// `notes` scope -> `notes_read` and `whoami`; the `admins` group -> everything; `reset`
/// scope -> `admin_reset`, each call on approval.
async fn host() -> Arc<Host> {
    let tools = NativeTools::new("app")
        .tool_with_context(
            "whoami",
            "Who is calling.",
            async |_: Nothing, context: CallContext| {
                let who = context.caller.map(|caller| caller.subject.clone());
                Ok::<_, String>(who.unwrap_or_else(|| "the operator".to_owned()))
            },
        )
        .tool("notes_read", "Reads notes.", async |_: Nothing| {
            Ok::<_, String>("notes".to_owned())
        })
        .tool("admin_reset", "Resets everything.", async |_: Nothing| {
            Ok::<_, String>("reset".to_owned())
        });
    let rule = |scopes: &[&str], groups: Option<&str>, tools: &[&str]| AccessRule {
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        claims: groups
            .map(|g| ("groups".to_owned(), g.to_owned()))
            .into_iter()
            .collect(),
        tools: tools.iter().map(|t| (*t).to_owned()).collect(),
        ..AccessRule::default()
    };
    let on_approval = AccessRule {
        approval: Some(ApprovalMode::Always),
        ..rule(&["reset"], None, &["admin_reset"])
    };
    let mcp = McpConfig {
        access: vec![
            rule(&["notes"], None, &["notes_read", "whoami"]),
            rule(&[], Some("admins"), &["*"]),
            on_approval,
        ],
        ..McpConfig::default()
    };
    let host = Host::builder().native(tools).mcp(mcp).build().await;
    Arc::new(host.unwrap_or_else(|e| panic!("{e}")))
}

/// Serves `host` on 127.0.0.1 behind the test-only front; the URL of `/mcp`.
async fn serve(host: Arc<Host>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let local = listener.local_addr().expect("its address");
    let options = HttpServerOptions::default();
    let server = McpServer::new(host);
    let mcp = mcp_service(&server, local, &options, CancellationToken::new());
    let router = Arc::new(Router::new(mcp, server, &options));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let router = router.clone();
            let service = hyper::service::service_fn(move |mut request| {
                let router = router.clone();
                async move {
                    if let Some(caller) = described(request.headers()) {
                        request.extensions_mut().insert(Arc::new(caller));
                    }
                    Ok::<_, Infallible>(router.route(request).await)
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    format!("http://{local}/mcp")
}

/// The caller the test header describes.
fn described(headers: &http::HeaderMap) -> Option<Caller> {
    let text = headers.get(TEST_CALLER)?.to_str().ok()?;
    let mut parts = text.split(' ');
    let subject = parts.next()?.to_owned();
    let list = |part: Option<&str>| -> Vec<String> {
        let part = part.unwrap_or_default();
        part.split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let scopes = list(parts.next()).into_iter().collect();
    let groups = list(parts.next());
    Some(Caller {
        subject,
        client_id: Some("tests".to_owned()),
        issuer: "https://issuer.test".to_owned(),
        scopes,
        claims: [("groups".to_owned(), json!(groups))].into_iter().collect(),
    })
}

/// A client of one session, as one caller (or none).
struct Client {
    url: String,
    caller: Option<String>,
    session: Option<String>,
}

impl Client {
    /// Sends `call`, answers the approval question that comes first on its stream (which
    /// must name `tool`) with `action`, and returns the call's result.
    async fn answering_approval(&self, call: &Value, tool: &str, action: &str) -> Value {
        let mut answer = self.request(call).send().await.expect("an answer");
        let mut buffer = String::new();
        let question = next_message(&mut answer, &mut buffer).await;
        assert_eq!(question["method"], "elicitation/create", "{question}");
        let message = question["params"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("`{tool}`")), "{message}");
        let reply = json!({
            "jsonrpc": "2.0",
            "id": question["id"],
            "result": { "action": action, "content": {} },
        });
        let (status, _, _) = self.send(&reply).await;
        assert_eq!(status, 202);
        next_message(&mut answer, &mut buffer).await
    }

    /// A session opened as `caller` (`initialize` and `notifications/initialized`).
    async fn open(url: &str, caller: Option<&str>) -> Self {
        Self::open_with(url, caller, json!({})).await
    }

    /// A session opened as `caller`, whose client declares `capabilities`.
    async fn open_with(url: &str, caller: Option<&str>, capabilities: Value) -> Self {
        let mut client = Self {
            url: url.to_owned(),
            caller: caller.map(str::to_owned),
            session: None,
        };
        let params = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": { "name": "callers-tests", "version": "0" },
        });
        let (status, headers, _) = client.post(json!(0), "initialize", params).await;
        assert_eq!(status, 200);
        client.session = headers
            .get("mcp-session-id")
            .and_then(|id| id.to_str().ok())
            .map(str::to_owned);
        assert!(client.session.is_some(), "a session");
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        client.send(&initialized).await;
        client
    }

    /// The same session, presented by `caller`.
    fn as_caller(&self, caller: Option<&str>) -> Self {
        Self {
            url: self.url.clone(),
            caller: caller.map(str::to_owned),
            session: self.session.clone(),
        }
    }

    async fn send(&self, body: &Value) -> (u16, http::HeaderMap, String) {
        let response = self.request(body).send().await.expect("an answer");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.text().await.expect("a body"))
    }

    /// The POST of `body` in this session, as this caller.
    fn request(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut request = http()
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(caller) = &self.caller {
            request = request.header(TEST_CALLER, caller);
        }
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        request.body(body.to_string())
    }

    async fn post(&self, id: Value, method: &str, params: Value) -> (u16, http::HeaderMap, Value) {
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let (status, headers, text) = self.send(&body).await;
        let answer = messages(&text)
            .into_iter()
            .find(|message| message.get("id") == Some(&id))
            .unwrap_or(Value::String(text));
        (status, headers, answer)
    }

    async fn tool_names(&self) -> Vec<String> {
        let (_, _, answer) = self.post(json!(1), "tools/list", json!({})).await;
        let tools = answer["result"]["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut names: Vec<String> = (tools.iter())
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect();
        names.sort();
        names
    }

    async fn call(&self, tool: &str) -> Value {
        let params = json!({ "name": tool, "arguments": {} });
        self.post(json!(2), "tools/call", params).await.2
    }
}

/// A `tools/call` of `tool` on the stateless revision (2026-07-28) as `caller`, with `more`
/// params (`inputResponses`, `requestState`), from a client that declares `elicitation`
/// when `can_elicit`: its answer.
async fn stateless_call(
    url: &str,
    caller: &str,
    tool: &str,
    more: Value,
    can_elicit: bool,
) -> Value {
    let capabilities = if can_elicit {
        json!({ "elicitation": {} })
    } else {
        json!({})
    };
    let mut params = json!({
        "name": tool,
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        },
    });
    for (key, value) in more.as_object().into_iter().flatten() {
        params[key] = value.clone();
    }
    let body = json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params });
    let response = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .header(TEST_CALLER, caller)
        .body(body.to_string())
        .send()
        .await
        .expect("an answer");
    let text = response.text().await.expect("a body");
    (messages(&text).into_iter())
        .find(|message| message.get("id") == Some(&json!(9)))
        .unwrap_or(Value::String(text))
}

/// An HTTP client on the host's TLS set-up (its crypto provider installed).
fn http() -> reqwest::Client {
    crate::tls::install_crypto_provider();
    let client = reqwest::Client::builder().no_proxy().build();
    client.expect("an HTTP client")
}

/// The JSON-RPC messages of a body: one JSON value, or the `data:` of each SSE event.
fn messages(body: &str) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return vec![value];
    }
    (body.lines())
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

#[tokio::test]
async fn each_caller_lists_and_calls_only_its_tools_and_the_others_do_not_exist_for_it() {
    let url = serve(host().await).await;
    let alice = Client::open(&url, Some("alice notes")).await;
    assert_eq!(alice.tool_names().await, ["notes_read", "whoami"]);
    let admin = Client::open(&url, Some("root other admins,staff")).await;
    assert_eq!(
        admin.tool_names().await,
        ["admin_reset", "notes_read", "whoami"]
    );
    let stranger = Client::open(&url, Some("eve other staff")).await;
    assert!(stranger.tool_names().await.is_empty());
    let operator = Client::open(&url, None).await;
    assert_eq!(operator.tool_names().await.len(), 3);

    // The caller reaches the tool.
    let said = alice.call("whoami").await;
    assert_eq!(said["result"]["content"][0]["text"], "alice", "{said}");
    let said = operator.call("whoami").await;
    assert_eq!(
        said["result"]["content"][0]["text"], "the operator",
        "{said}"
    );

    // A tool it may not use is refused exactly as one there is not.
    let hidden = alice.call("admin_reset").await;
    let missing = alice.call("admin_resex").await;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    assert_eq!(
        hidden["error"]["message"],
        "there is no tool `admin_reset`; the tools are: whoami, notes_read"
    );
    assert_eq!(
        serde_json::to_string(&hidden)
            .expect("JSON")
            .replace("admin_reset", "admin_resex"),
        serde_json::to_string(&missing).expect("JSON"),
    );
    let allowed = admin.call("admin_reset").await;
    assert_eq!(
        allowed["result"]["content"][0]["text"], "reset",
        "{allowed}"
    );
}

#[tokio::test]
async fn a_session_serves_only_the_caller_that_opened_it() {
    let url = serve(host().await).await;
    let alice = Client::open(&url, Some("alice notes")).await;
    let list = |client: Client| async move {
        let (status, _, answer) = client.post(json!(7), "tools/list", json!({})).await;
        (status, answer)
    };
    let (status, answer) = list(alice.as_caller(Some("alice notes"))).await;
    assert_eq!(status, 200, "{answer}");
    // Another caller with alice's session id, even with the same scopes: as if there were no
    // such session. So is a request with no caller at all.
    for other in [Some("bob notes"), Some("root other admins"), None] {
        let (status, answer) = list(alice.as_caller(other)).await;
        assert_eq!(status, 404, "{other:?}: {answer}");
        assert_eq!(answer, "not found: there is no such session");
    }
    // And the same subject from another issuer is another caller: told apart in unit tests
    // of `identity`; here the session still serves alice.
    let (status, _) = list(alice.as_caller(Some("alice notes"))).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_call_its_callers_entry_gives_on_approval_waits_for_the_clients() {
    let url = serve(host().await).await;
    let carol = "carol reset";
    let asked = stateless_call(&url, carol, "admin_reset", json!({}), true).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let question = &asked["result"]["inputRequests"]["toolhost/approval"];
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    let message = question["params"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`admin_reset`"), "{message}");
    let state = asked["result"]["requestState"].clone();
    let answer = |action: &str| {
        json!({
            "inputResponses": { "toolhost/approval": { "action": action, "content": {} } },
            "requestState": state,
        })
    };

    // Declined: the tool does not run.
    let declined = stateless_call(&url, carol, "admin_reset", answer("decline"), true).await;
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    let text = declined["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("`decline`"), "{text}");
    // An accept without the server's question (no state) approves nothing: asked again.
    let mut unasked = answer("accept");
    unasked
        .as_object_mut()
        .map(|params| params.remove("requestState"));
    let again = stateless_call(&url, carol, "admin_reset", unasked, true).await;
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    // Carol's question, answered by another caller with the same rights: refused.
    let other = stateless_call(&url, "dave reset", "admin_reset", answer("accept"), true).await;
    assert_eq!(other["error"]["code"], -32602, "{other}");
    // Accepted: it runs.
    let accepted = stateless_call(&url, carol, "admin_reset", answer("accept"), true).await;
    assert_eq!(
        accepted["result"]["content"][0]["text"], "reset",
        "{accepted}"
    );

    // An admin's entry gives the same tool without approval: not asked.
    let root = stateless_call(&url, "root other admins", "admin_reset", json!({}), true).await;
    assert_eq!(root["result"]["content"][0]["text"], "reset", "{root}");
    // A client that cannot be asked is told the capability it lacks; the tool does not run.
    let mute = stateless_call(&url, carol, "admin_reset", json!({}), false).await;
    assert_eq!(mute["error"]["code"], -32021, "{mute}");
    assert!(
        mute["error"]["data"]["requiredCapabilities"]
            .get("elicitation")
            .is_some(),
        "{mute}"
    );
}

/// Arguments whose `region` travels in an `Mcp-Param-Region` header too (SEP-2243).
#[derive(Deserialize, JsonSchema)]
struct InRegion {
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

#[tokio::test]
async fn a_tools_header_rules_do_not_give_away_a_tool_the_caller_may_not_use() {
    let tools = NativeTools::new("app").tool(
        "region_report",
        "Reports on a region.",
        async |args: InRegion| Ok::<_, String>(format!("report on {}", args.region)),
    );
    let mcp = McpConfig {
        access: vec![AccessRule {
            claims: [("groups".to_owned(), "admins".to_owned())].into(),
            tools: ["*".to_owned()].into(),
            ..AccessRule::default()
        }],
        ..McpConfig::default()
    };
    let host = Host::builder().native(tools).mcp(mcp).build().await;
    let url = serve(Arc::new(host.unwrap_or_else(|e| panic!("{e}")))).await;
    // No `Mcp-Param-Region` header: rmcp refuses a call of the tool before it reaches the
    // server, for a caller who may use it.
    let eu = json!({ "arguments": { "region": "eu" } });
    let admin = "root other admins";
    let refused = stateless_call(&url, admin, "region_report", eu.clone(), false).await;
    assert!(
        refused.to_string().contains("Mcp-Param-Region"),
        "{refused}"
    );
    // For one who may not, the tool is unknown, as one there is not: its header rules too.
    let hidden = stateless_call(&url, "alice notes", "region_report", eu.clone(), false).await;
    let missing = stateless_call(&url, "alice notes", "region_reporx", eu, false).await;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    assert_eq!(
        hidden.to_string().replace("region_report", "region_reporx"),
        missing.to_string()
    );
}

/// The next JSON-RPC message on the SSE stream `answer`, read on from `buffer`.
async fn next_message(answer: &mut reqwest::Response, buffer: &mut String) -> Value {
    loop {
        if let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            if let Some(message) = messages(&event).into_iter().next() {
                return message;
            }
            continue;
        }
        let chunk = answer.chunk().await.expect("the stream").expect("more");
        buffer.push_str(std::str::from_utf8(&chunk).expect("UTF-8"));
    }
}

#[tokio::test]
async fn in_a_session_the_server_asks_the_client_for_approval_and_waits() {
    let url = serve(host().await).await;
    let can_elicit = json!({ "elicitation": {} });
    let carol = Client::open_with(&url, Some("carol reset"), can_elicit).await;
    for (id, action, ran) in [(5, "decline", false), (6, "accept", true)] {
        let params = json!({ "name": "admin_reset", "arguments": {} });
        let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
        // The question comes first, on the call's own stream; the call waits for the answer.
        let result = carol.answering_approval(&call, "admin_reset", action).await;
        assert_eq!(result["id"], id, "{result}");
        let text = result["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        if ran {
            assert_eq!(text, "reset", "{result}");
        } else {
            assert_eq!(result["result"]["isError"], true, "{result}");
            assert!(text.contains("`decline`"), "{result}");
        }
    }
    // A session whose client declared no elicitation cannot be asked: refused, not run.
    let mute = Client::open(&url, Some("carol reset")).await;
    let refused = mute.call("admin_reset").await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

#[tokio::test]
async fn a_caller_past_its_rate_is_answered_429_over_http_and_the_others_are_not() {
    let limits = crate::manifest::PerCallerLimits {
        rate: std::num::NonZeroU32::new(1),
        burst: std::num::NonZeroU32::new(2),
        calls: None,
    };
    let mcp = McpConfig {
        per_caller: limits,
        ..McpConfig::default()
    };
    let tools = NativeTools::new("app").tool("noop", "Does nothing.", async |_: Nothing| {
        Ok::<_, String>(String::new())
    });
    let host = Host::builder().native(tools).mcp(mcp).build().await;
    let url = serve(Arc::new(host.unwrap_or_else(|e| panic!("{e}")))).await;
    // `initialize` and `notifications/initialized` take alice's burst; her next turn is a
    // second away, past the longest wait in her line.
    let alice = Client::open(&url, Some("alice notes")).await;
    let (status, headers, answer) = alice.post(json!(41), "tools/list", json!({})).await;
    assert_eq!(status, 429, "{answer}");
    let retry = headers.get("retry-after").and_then(|v| v.to_str().ok());
    assert!(
        retry
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|s| s >= 1),
        "{retry:?}"
    );
    assert_eq!(answer["id"], 41, "{answer}");
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    // Bob has an allowance of his own.
    let bob = Client::open(&url, Some("bob notes")).await;
    assert!(bob.session.is_some());
}

/// `host mcp` in code mode with one tool, `admin_reset`, given to the `reset` scope on
/// approval; `run_code` given to the `code` scope, and to `code-asked` on approval. The URL.
#[cfg(feature = "code-mode")]
async fn serve_code_mode() -> String {
    let runner = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../example-tools/dist/runner-js.wasm"
    );
    let tools =
        NativeTools::new("app").tool("admin_reset", "Resets everything.", async |_: Nothing| {
            Ok::<_, String>("reset".to_owned())
        });
    let mcp = McpConfig {
        access: vec![
            AccessRule {
                scopes: ["code".to_owned()].into(),
                tools: ["run_code".to_owned()].into(),
                ..AccessRule::default()
            },
            AccessRule {
                scopes: ["code-asked".to_owned()].into(),
                tools: ["run_code".to_owned()].into(),
                approval: Some(ApprovalMode::Always),
                ..AccessRule::default()
            },
            AccessRule {
                scopes: ["reset".to_owned()].into(),
                tools: ["admin_reset".to_owned()].into(),
                approval: Some(ApprovalMode::Always),
                ..AccessRule::default()
            },
        ],
        ..McpConfig::default()
    };
    let host = Host::builder()
        .native(tools)
        .mcp(mcp)
        .code_mode(true)
        .code_runner(runner)
        .build()
        .await;
    serve(Arc::new(host.unwrap_or_else(|e| {
        panic!("{e} (`just tools` builds the runner)")
    })))
    .await
}

/// A program's call of a tool its caller may use only on approval asks the client first, in
/// the program's call's stream, as a plain call does: accepted, it runs; declined, it is a
/// denial the program catches; a client that cannot be asked gets the denial unasked.
#[cfg(feature = "code-mode")]
#[tokio::test]
async fn a_programs_call_that_needs_approval_asks_the_client_and_a_decline_is_caught() {
    let url = serve_code_mode().await;
    let program = "try { return await tools.admin_reset({}); } \
                   catch (error) { return `${error.kind}: ${error.message}`; }";
    let params = json!({ "name": "run_code", "arguments": { "code": program } });
    let result_of = |answer: &Value| -> Value {
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        let report: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {answer}"));
        report["result"].clone()
    };
    let can_elicit = json!({ "elicitation": {} });
    let carol = Client::open_with(&url, Some("carol reset,code"), can_elicit).await;
    let declined = "denied: the call of `admin_reset` did not run: it needs approval, and the \
                    client answered `decline` when asked";
    for (id, action, expected) in [(5, "decline", declined), (6, "accept", "reset")] {
        let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
        let result = carol.answering_approval(&call, "admin_reset", action).await;
        assert_eq!(result["id"], id, "{result}");
        assert_eq!(result_of(&result), expected, "{result}");
    }
    // A client that declared no elicitation is not asked: the program gets the denial.
    let mute = Client::open(&url, Some("carol reset,code")).await;
    let (_, _, answer) = mute.post(json!(7), "tools/call", params.clone()).await;
    let said = result_of(&answer);
    let said = said.as_str().unwrap_or_default();
    assert!(
        said.starts_with("denied: the call of `admin_reset` did not run"),
        "{answer}"
    );
    assert!(said.contains("elicitation"), "{said}");
}

/// A caller given `run_code` itself only on approval is asked before the program runs.
#[cfg(feature = "code-mode")]
#[tokio::test]
async fn run_code_given_on_approval_asks_before_the_program_runs() {
    let url = serve_code_mode().await;
    let program = "return await tools.admin_reset({});";
    let params = json!({ "name": "run_code", "arguments": { "code": program } });
    let dave = Client::open_with(&url, Some("dave code-asked"), json!({ "elicitation": {} })).await;
    let call = json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": params });
    let result = dave.answering_approval(&call, "run_code", "decline").await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("the call of `run_code` did not run"),
        "{result}"
    );
}
