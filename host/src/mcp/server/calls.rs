//! A `tools/call` from receipt to answer, however it arrived (rmcp's handler, or a stdio line
//! served directly): its context, its span and outcome, the tool's output as logging
//! notifications and its reports as they come, and the rounds of a tool that asks for input.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, LoggingLevel,
    LoggingMessageNotificationParam, RequestId, RequestMetaObject,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::approval::{self, Approval};
use super::asking::{self, Asking, Ended, Input, Kind, Round};
use super::identity;
use super::reports::{self, Notification, Report};
use super::tools::Served;
use super::{McpServer, lock};
use crate::agent::{AuditSink as _, ServedCall};
use crate::arguments::Arguments;
use crate::asking::{Ask, Asker};
use crate::caller::Caller;
use crate::content::InputRequired;
use crate::error::{CallError, ErrorKind};
use crate::host::Host;
use crate::sandbox::{CapturedLog, Observer};
use crate::source::{CallContext, ToolOutput};
use crate::telemetry::context;
#[cfg(feature = "code-mode")]
use crate::toolbox::access::Allowed;

impl McpServer {
    /// The call's context: the request id, the `_meta` values `host`'s manifest lets through
    /// (a value that is not a string passes as its JSON text), the caller, and what `call`
    /// has for the tool (its observer, asker and input, taken from it).
    fn context(host: &Host, call: &mut ToolCall<'_>) -> CallContext {
        let meta = call.meta;
        let pass_meta: &BTreeSet<String> = &host.mcp_config().pass_meta;
        let values = if pass_meta.is_empty() {
            Default::default()
        } else {
            meta.iter()
                .filter(|(key, _)| pass_meta.contains(key.as_str()))
                .map(|(key, value)| {
                    let value = match value {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    (key.clone(), value)
                })
                .collect()
        };
        CallContext {
            call_id: call.id.to_string(),
            values,
            observer: call.observer.take(),
            asker: call.asker.take(),
            input_responses: std::mem::take(&mut call.input.responses),
            request_state: call.input.state.take(),
            task: None,
            caller: call.caller.clone(),
        }
    }

    /// Runs a `tools/call`, however it arrived: refused while draining, a span of its own,
    /// counted among the calls in flight.
    pub(super) async fn answer(&self, call: ToolCall<'_>) -> Answer {
        if self.is_draining() {
            let error = ErrorData::internal_error(
                "the server is shutting down and takes no new calls",
                None,
            );
            return Answer::error(error);
        }
        // Each call is a span: the tool, the request, how it ended and how long it took. Its
        // parent is the trace context the client sent, if any (`_meta`, else the headers).
        let parent = context::extract(Some(call.meta), call.headers);
        let tool = shortened(call.name);
        let session = (call.headers)
            .and_then(|headers| headers.get("mcp-session-id"))
            .and_then(|value| value.to_str().ok());
        let span = {
            let _parent = parent.attach();
            tracing::info_span!(
                "mcp_call",
                otel.name = %format_args!("tools/call {tool}"),
                otel.kind = "server",
                otel.status_code = tracing::field::Empty,
                mcp.method.name = "tools/call",
                gen_ai.tool.name = tool.as_ref(),
                jsonrpc.request.id = %call.id,
                mcp.session.id = session,
                error.type = tracing::field::Empty,
                tool = tool.as_ref(),
                id = %call.id,
                outcome = tracing::field::Empty,
                duration_ms = tracing::field::Empty,
            )
        };
        let call = self.call(call, span.clone()).instrument(span);
        self.shared.calls.track_future(call).await
    }

    /// Runs the call; `span` is the one it runs in, where its outcome is recorded. Every
    /// call is written to the audit log (when the manifest keeps one) before it is answered.
    async fn call(&self, mut call: ToolCall<'_>, span: tracing::Span) -> Answer {
        let host = tokio::select! {
            biased;
            () = call.cancelled.cancelled() => {
                return Answer::error(ErrorData::internal_error("cancelled", None));
            }
            host = self.loaded_host() => host,
        };
        let Some(served) = self.served() else {
            unreachable!("the tools are served once the host is loaded");
        };
        let name = call.name;
        // A tool the caller may not use is refused exactly as one there is not.
        let allowed = served.access.allowed(call.caller.as_deref());
        let names = |names: Vec<String>| -> Vec<String> {
            names.into_iter().filter(|n| allowed.tool(n)).collect()
        };
        if !(served.get(name).is_some() || is_program(&host, name)) || !allowed.tool(name) {
            let error = unknown_tool(name, &names(served.catalog.names()));
            let ended = Finished::refused(error);
            return audited(&host, &call, ended, std::time::Duration::ZERO);
        }
        // A call given only on approval (a program's too) waits for the client's.
        let needs_approval = allowed.needs_approval(name);
        if needs_approval {
            let ended = match approval::decide(&mut call.input, name, call.arguments) {
                Approval::Given => None,
                Approval::Ask(question) => Some(Finished::asking(question)),
                Approval::Refused(action) => Some(Finished::not_approved(name, &action)),
            };
            if let Some(ended) = ended {
                span.record("outcome", ended.outcome);
                return audited(&host, &call, ended, std::time::Duration::ZERO);
            }
        }
        #[cfg(feature = "code-mode")]
        if let Some(code) = (host.code_mode()).filter(|code| code.tool() == name) {
            let offered = names(served.catalog.names()).into_iter().collect();
            return Self::program_call(&host, &served, code, call, (offered, &allowed), &span)
                .await;
        }
        let context = Self::context(&host, &mut call);
        let started = Instant::now();
        let outcome = tokio::select! {
            biased;
            () = call.cancelled.cancelled() => None,
            result = host.toolbox().call_parsed(name, call.arguments, &context) => {
                Some(result)
            }
        };
        let duration = started.elapsed();
        let mut ended = match outcome {
            Some(Err(CallError::UnknownTool { name, available })) => {
                // The tools changed between the look-up and the call.
                Finished::refused(unknown_tool(&name, &names(available)))
            }
            outcome => Finished::of(name, outcome, &served, call.level),
        };
        if needs_approval {
            // What the approved tool asks next comes back approved.
            ended.answer.asked = ended.answer.asked.map(approval::keep_approved);
        }
        let outcome = ended.outcome;
        span.record("outcome", outcome);
        if outcome != "ok" {
            span.record("error.type", outcome);
            span.record("otel.status_code", "ERROR");
        }
        if outcome == "input_required" {
            return audited(&host, &call, ended, duration);
        }
        // A call that may have changed a resource of its component tells its subscribers.
        if outcome == "ok" {
            self.after_call(&host, &served, name).await;
        }
        let duration_ms = duration.as_secs_f64() * 1e3;
        span.record("duration_ms", duration_ms);
        tracing::info!(tool = name, id = %call.id, duration_ms, outcome, "tools/call");
        audited(&host, &call, ended, duration)
    }

    /// A call of code mode's tool: its program run with the tools `offered`, those of them
    /// that the caller is `allowed` only on approval once the client approves each call.
    #[cfg(feature = "code-mode")]
    async fn program_call(
        host: &Host,
        served: &Served,
        code: &crate::code::CodeMode,
        mut call: ToolCall<'_>,
        (offered, allowed): (BTreeSet<String>, &Allowed),
        span: &tracing::Span,
    ) -> Answer {
        let on_approval = (offered.iter())
            .filter(|tool| allowed.needs_approval(tool))
            .cloned()
            .collect();
        let context = Self::context(host, &mut call);
        let started = Instant::now();
        let ended = tokio::select! {
            biased;
            () = call.cancelled.cancelled() => None,
            ended = super::code::run(host, code, offered, on_approval, context, call.arguments) => {
                Some(ended)
            }
        };
        let ended = match ended {
            Some(ended) => Finished {
                outcome: ended.outcome,
                error: ended.error,
                answer: Answer {
                    logs: Vec::new(),
                    result: Ok(ended.result),
                    asked: None,
                    outcome: ended.outcome,
                },
            },
            None => Finished::of(call.name, None, served, call.level),
        };
        span.record("outcome", ended.outcome);
        audited(host, &call, ended, started.elapsed())
    }

    /// A `tools/call` from rmcp's handler: its rounds, when the tool asks for input (the
    /// client's next request on 2026-07-28; the server asking the client in a session).
    pub(super) async fn serve_call(
        &self,
        mut request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Clients may leave `arguments` out for a tool that takes none.
        let arguments = match request.arguments.take() {
            Some(arguments) => Arguments::from_object(arguments),
            None => Arguments::empty(),
        };
        // A request of the stateless revision says which logs it wants, or gets none; in a
        // session, the session's level (`logging/setLevel`) applies.
        let stateless = cx
            .meta
            .protocol_version()
            .is_some_and(|version| !version.has_initialize());
        let level = match cx.meta.log_level() {
            Some(level) => Some(level),
            None if stateless => None,
            None => Some(self.level()),
        };
        let caller = identity::caller_key(identity::caller_of(&cx).as_deref());
        let answering = request.input_responses.is_some() || request.request_state.is_some();
        if self.runs_as_task(&request.name, &cx, answering).await? {
            return self.serve_task(request, cx, arguments, level, caller).await;
        }
        let asking = Asking {
            kind: Kind::Tool,
            name: &request.name,
            arguments: arguments.text(),
            caller: &caller,
        };
        // What the tool's MCP server asks while it runs goes to the client of a session; a
        // stateless request has no client to ask until it has answered.
        let asker: Arc<dyn Ask> = if stateless {
            Arc::new(asking::CannotAsk(asking::STATELESS))
        } else {
            Arc::new(asking::SessionAsker(cx.peer.clone(), cx.id.clone()))
        };
        let asker = Asker(asker);
        let responses = request.input_responses.take();
        let token = request.request_state.as_deref();
        let (name, arguments, cx) = (&*request.name, &arguments, &cx);
        let round = |input| {
            let asker = asker.clone();
            async move {
                let streaming = Streaming {
                    cx,
                    name,
                    arguments,
                    level,
                    asker,
                };
                let answer = self.answer_streaming(streaming, input).await;
                match answer.asked {
                    Some(asked) => Ok(Round::Asked(asked)),
                    None => answer.result.map(Round::Done),
                }
            }
        };
        match self.rounds(asking, responses, token, cx, round).await? {
            Ended::Done(result) => Ok(result.into()),
            Ended::InputRequired(result) => Ok(result.into()),
        }
    }
}

/// Whether `name` is code mode's tool (`run_code`), which `host` serves when code mode is on.
fn is_program(host: &Host, name: &str) -> bool {
    #[cfg(feature = "code-mode")]
    return host.code_mode().is_some_and(|code| code.tool() == name);
    #[cfg(not(feature = "code-mode"))]
    {
        let _ = (host, name);
        false
    }
}

/// A `tools/call` as the server runs it, from rmcp's handler or straight from a stdio line.
pub(super) struct ToolCall<'a> {
    pub(super) id: &'a RequestId,
    pub(super) name: &'a str,
    /// The arguments (`{}` when the client left them out).
    pub(super) arguments: &'a Arguments,
    /// The request's `_meta`, whose keys the manifest lets through reach the tool.
    pub(super) meta: &'a RequestMetaObject,
    /// The least level of the logging notifications the client wants; none at all when
    /// `None`.
    pub(super) level: Option<LoggingLevel>,
    pub(super) cancelled: &'a CancellationToken,
    /// Who gets the tool's progress reports and log lines.
    pub(super) observer: Option<Observer>,
    /// Who answers what is asked while the tool runs (an MCP server's elicitation).
    pub(super) asker: Option<Asker>,
    /// What an earlier round of the call, in which the tool asked for input, left.
    pub(super) input: Input,
    /// Who made the request, when the HTTP front verified an access token for it.
    pub(super) caller: Option<Arc<Caller>>,
    /// The HTTP request's headers (over HTTP): its trace context, its session.
    pub(super) headers: Option<&'a http::HeaderMap>,
}

/// What a call answers: what the tool wrote to stdout and stderr as logging notifications
/// (to be sent first), then the result; or what the tool asks for before it can finish.
pub(super) struct Answer {
    pub(super) logs: Vec<LoggingMessageNotificationParam>,
    pub(super) result: Result<CallToolResult, ErrorData>,
    pub(super) asked: Option<InputRequired>,
    /// How the call ended, as its span and the audit log have it (`ok`, an error's kind,
    /// `input_required`; `error` for a call refused before it ran).
    pub(super) outcome: &'static str,
}

impl Answer {
    fn error(error: ErrorData) -> Self {
        Self {
            logs: Vec::new(),
            result: Err(error),
            asked: None,
            outcome: "error",
        }
    }
}

/// How a call ended: its outcome (`ok`, an error's kind, `input_required`), the operator's
/// message when it failed, and the answer.
struct Finished {
    outcome: &'static str,
    error: Option<String>,
    answer: Answer,
}

impl Finished {
    /// A call refused as the call of an unknown tool.
    fn refused(error: ErrorData) -> Self {
        Self {
            outcome: "unknown_tool",
            error: Some(error.message.to_string()),
            answer: Answer {
                outcome: "unknown_tool",
                ..Answer::error(error)
            },
        }
    }

    /// A call that asks for its approval before it runs.
    fn asking(question: InputRequired) -> Self {
        Self {
            outcome: "input_required",
            error: None,
            answer: Answer {
                logs: Vec::new(),
                result: Ok(CallToolResult::success(Vec::new())),
                asked: Some(question),
                outcome: "input_required",
            },
        }
    }

    /// A call of `name` the client did not approve (it answered `action`): it did not run.
    fn not_approved(name: &str, action: &str) -> Self {
        let text = format!(
            "the call of `{}` did not run: it needs approval, and the client answered \
             `{action}` when asked",
            shortened(name)
        );
        Self {
            outcome: "rejected",
            error: Some(text.clone()),
            answer: Answer {
                logs: Vec::new(),
                result: Ok(error_result(text)),
                asked: None,
                outcome: "rejected",
            },
        }
    }

    /// How a call of `name` that ran (or was cancelled: `None`) ended.
    fn of(
        name: &str,
        outcome: Option<Result<ToolOutput, CallError>>,
        served: &Served,
        level: Option<LoggingLevel>,
    ) -> Self {
        let done = |outcome, error, logs, result| Self {
            outcome,
            error,
            answer: Answer {
                logs,
                result: Ok(result),
                asked: None,
                outcome,
            },
        };
        match outcome {
            // Dropping the call dropped its store, and so its instance.
            None => {
                let error = CallError::Cancelled {
                    tool: name.to_owned(),
                };
                let result = error_result(error.model_message());
                done("cancelled", Some(error.to_string()), Vec::new(), result)
            }
            Some(Ok(output)) if output.input_required.is_some() => Self {
                outcome: "input_required",
                error: None,
                answer: Answer {
                    logs: log_messages(name, &output, level),
                    result: Ok(CallToolResult::success(Vec::new())),
                    asked: output.input_required,
                    outcome: "input_required",
                },
            },
            Some(Ok(output)) => {
                let logs = log_messages(name, &output, level);
                match served.result(name, output) {
                    Ok(result) => done("ok", None, logs, result),
                    Err(problem) => {
                        tracing::warn!("`{name}` {problem}");
                        let text = "the tool returned a malformed result".to_owned();
                        done("malformed_result", Some(problem), logs, error_result(text))
                    }
                }
            }
            Some(Err(error)) => {
                let (outcome, result) = failed(&error);
                done(outcome, Some(error.to_string()), Vec::new(), result)
            }
        }
    }
}

/// `ended`'s answer, once the call is in `host`'s audit log (if it keeps one). A call that
/// cannot be recorded is answered with an error, as a run of the loop ends.
fn audited(
    host: &Host,
    call: &ToolCall<'_>,
    ended: Finished,
    duration: std::time::Duration,
) -> Answer {
    let Some(log) = host.audit_log() else {
        return ended.answer;
    };
    let call_id = call.id.to_string();
    let record = ServedCall {
        call_id: &call_id,
        tool: call.name,
        arguments: call.arguments,
        outcome: ended.outcome,
        error: ended.error.as_deref(),
        duration,
        caller: call.caller.as_deref(),
        parent: None,
    };
    match record.record(host.toolbox(), log.as_ref()) {
        Ok(()) => ended.answer,
        Err(error) => {
            tracing::error!("cannot write to {}: {error}", log.describe());
            Answer::error(ErrorData::internal_error(
                "the call could not be recorded in the server's audit log",
                None,
            ))
        }
    }
}

/// What the tool wrote to stdout and stderr, one logging notification per line (logger: the
/// tool's name), those at `level` or above.
fn log_messages(
    tool: &str,
    output: &ToolOutput,
    level: Option<LoggingLevel>,
) -> Vec<LoggingMessageNotificationParam> {
    let Some(level) = level else {
        return Vec::new();
    };
    if output.stdout.is_empty() && output.stderr.is_empty() {
        return Vec::new();
    }
    [("stdout", &output.stdout), ("stderr", &output.stderr)]
        .into_iter()
        .flat_map(|(stream, log)| log_lines(stream, log))
        .filter(|(at, _)| *at as u8 >= level as u8)
        .map(|(at, data)| LoggingMessageNotificationParam::new(at, data).with_logger(tool))
        .collect()
}

/// The lines of a captured stream as logging notifications: each non-empty line at info, and
/// a warning when some of it was dropped.
fn log_lines(stream: &str, log: &CapturedLog) -> Vec<(LoggingLevel, Value)> {
    let mut lines: Vec<(LoggingLevel, Value)> = log
        .text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| (LoggingLevel::Info, Value::from(line)))
        .collect();
    if log.dropped > 0 {
        lines.push((
            LoggingLevel::Warning,
            Value::from(format!(
                "... {} more bytes of {stream} dropped",
                log.dropped
            )),
        ));
    }
    lines
}

/// A call that failed: its outcome and the error result with the model's text; logged at
/// info when the tool or its arguments are at fault, else as a warning with its causes.
fn failed(error: &CallError) -> (&'static str, CallToolResult) {
    match error.kind() {
        ErrorKind::InvalidArguments | ErrorKind::ToolFailed => tracing::info!("{error}"),
        _ => tracing::warn!("{}", crate::error::chain(error)),
    }
    (error.kind().as_str(), error_result(error.model_message()))
}

pub(super) fn error_result(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// An unknown tool is a JSON-RPC error: -32602, as the MCP specification's example has it
/// (-32601 would become HTTP 404 on stateless HTTP). The name is echoed shortened.
fn unknown_tool(name: &str, available: &[String]) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "there is no tool `{}`; the tools are: {}",
            shortened(name),
            available.join(", ")
        ),
        None,
    )
}

/// The most characters of a name a client sent that are echoed (in errors, in the log).
const ECHOED: usize = 64;

/// `name` as echoed: its first [`ECHOED`] characters, and `...` if there were more.
fn shortened(name: &str) -> std::borrow::Cow<'_, str> {
    match name.char_indices().nth(ECHOED) {
        Some((end, _)) => format!("{}... ({} bytes)", &name[..end], name.len()).into(),
        None => name.into(),
    }
}

impl McpServer {
    /// Seals the request states of calls that ask for input (2026-07-28) with a key made from
    /// `secret` instead of a random one: replicas behind a balancer share it, so that the
    /// next round of a call may reach any of them. At least 32 bytes.
    pub fn use_state_key(&self, secret: &[u8]) -> Result<(), String> {
        let key = asking::StateKey::from_secret(secret)?;
        *lock(&self.shared.state_key) = Some(Arc::new(key));
        Ok(())
    }

    pub(super) fn state_key(&self) -> Result<Arc<asking::StateKey>, ErrorData> {
        lock(&self.shared.state_key).clone().ok_or_else(|| {
            ErrorData::internal_error(
                "this server cannot seal request states (no randomness)",
                None,
            )
        })
    }
}

/// A round of a `tools/call` from rmcp's handler: its request, and who answers what is asked
/// while it runs.
struct Streaming<'a> {
    cx: &'a RequestContext<RoleServer>,
    name: &'a str,
    arguments: &'a Arguments,
    level: Option<LoggingLevel>,
    asker: Asker,
}

impl McpServer {
    /// Runs one round of a `tools/call` from rmcp's handler: the tool's reports go out while
    /// it runs, on the stream of its answer, and its output lines after them.
    async fn answer_streaming(&self, streaming: Streaming<'_>, input: Input) -> Answer {
        let Streaming {
            cx,
            name,
            arguments,
            level,
            asker,
        } = streaming;
        let (observer, mut reports) = reports::channel();
        let call = ToolCall {
            id: &cx.id,
            name,
            arguments,
            meta: &cx.meta,
            level,
            cancelled: &cx.ct,
            observer: Some(observer),
            asker: Some(asker),
            input,
            caller: identity::caller_of(cx),
            headers: (cx.extensions.get::<http::request::Parts>()).map(|parts| &parts.headers),
        };
        let token = cx.meta.get_progress_token();
        let answer = self.answer(call);
        tokio::pin!(answer);
        let answer = loop {
            tokio::select! {
                biased;
                answer = &mut answer => break answer,
                Some(report) = reports.recv() => {
                    notify(&cx.peer, report, token.as_ref(), level).await;
                }
            }
        };
        while let Ok(report) = reports.try_recv() {
            notify(&cx.peer, report, token.as_ref(), level).await;
        }
        for message in &answer.logs {
            if let Err(error) = cx.peer.notify_logging_message(message.clone()).await {
                tracing::debug!("cannot send the tool's output to the client: {error}");
                break;
            }
        }
        answer
    }
}

/// Sends the notification for a tool's `report`, if the client wants one.
async fn notify(
    peer: &Peer<RoleServer>,
    report: Report,
    token: Option<&rmcp::model::ProgressToken>,
    level: Option<LoggingLevel>,
) {
    let sent = match report.notification(token, level) {
        Some(Notification::Progress(param)) => peer.notify_progress(param).await,
        Some(Notification::Log(param)) => peer.notify_logging_message(param).await,
        None => return,
    };
    if let Err(error) = sent {
        tracing::debug!("cannot send a tool's report to the client: {error}");
    }
}
