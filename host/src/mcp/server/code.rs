//! Code mode over MCP: `host mcp` serving `run_code` (when the host's code mode is on), so the
//! client's model can write one program that calls the served tools. The program may call the
//! tools the caller may use; each of its calls is a real call (schema, sandbox, limits), is
//! told to the client as progress of the program's call, and is written to the audit log with
//! the program's call as its parent. A call of a tool the caller's access entries give only on
//! approval asks the client first, as a plain call does (in a session, an `elicitation/create`
//! the program waits for); not approved, or with no client to ask, it is `denied`, an error the
//! program can catch.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use super::approval;
use crate::agent::{AuditSink as _, ServedCall};
use crate::arguments::Arguments;
use crate::code::{ApproveCall, CodeMode, ToolboxCalls};
use crate::engine::runner::ProgramRun;
use crate::host::Host;
use crate::source::CallContext;

/// How a program's call ended: its outcome (`ok`, `invalid_arguments`, `program_failed`),
/// the operator's message when it failed, and the result.
pub(super) struct ProgramEnded {
    pub(super) outcome: &'static str,
    pub(super) error: Option<String>,
    pub(super) result: CallToolResult,
}

/// Runs the program in `arguments` with the tools in `offered` (those in `on_approval` once
/// the client approves each call), reporting to the context's observer; its calls are
/// audited under `context.call_id`.
pub(super) async fn run(
    host: &Host,
    code: &CodeMode,
    offered: BTreeSet<String>,
    on_approval: BTreeSet<String>,
    mut context: CallContext,
    arguments: &Arguments,
) -> ProgramEnded {
    let program = match CodeMode::code_of(arguments.value()) {
        Ok(program) => program,
        Err(message) => {
            return ProgramEnded {
                outcome: "invalid_arguments",
                error: Some(message.clone()),
                result: CallToolResult::error(vec![ContentBlock::text(message)]),
            };
        }
    };
    let observer = context.observer.take();
    let mut calls = ToolboxCalls::new(host.toolbox().clone(), offered, context.clone());
    if let Some(observer) = observer {
        calls = calls.with_progress(observer, code.tool());
    }
    if !on_approval.is_empty() {
        calls = calls.with_approval(Arc::new(ClientApproval { tools: on_approval }));
    }
    let run = code.run(program, Arc::new(calls)).await;
    audit_calls(host, &context, &run);
    match code.report(&run) {
        Ok(text) => ProgramEnded {
            outcome: "ok",
            error: None,
            result: CallToolResult::success(vec![ContentBlock::text(text)]),
        },
        Err(text) => ProgramEnded {
            outcome: "program_failed",
            error: run.result.as_ref().err().map(ToString::to_string),
            result: CallToolResult::error(vec![ContentBlock::text(text)]),
        },
    }
}

/// Writes each of the program's calls to the audit log, if the host keeps one.
fn audit_calls(host: &Host, context: &CallContext, run: &ProgramRun) {
    let Some(log) = host.audit_log() else {
        return;
    };
    for (index, call) in run.calls.iter().enumerate() {
        let call_id = crate::code::nested_id(&context.call_id, index as u32);
        let arguments = Arguments::parse(&call.arguments).unwrap_or_else(|_| Arguments::empty());
        let (outcome, error) = match &call.outcome {
            Some(Ok(_)) => ("ok", None),
            Some(Err(error)) => (error.kind.as_str(), Some(error.message.as_str())),
            None => ("cancelled", None),
        };
        let record = ServedCall {
            call_id: &call_id,
            tool: &call.tool,
            arguments: &arguments,
            outcome,
            error,
            duration: call.duration,
            caller: context.caller.as_deref(),
            parent: Some(&context.call_id),
        };
        if let Err(error) = record.record(host.toolbox(), log.as_ref()) {
            tracing::error!("cannot write to {}: {error}", log.describe());
        }
    }
}

/// Asks the client of the program's call before a call of a tool its caller may use only on
/// approval: the question `host mcp` asks before a plain call of it ([`approval`]).
struct ClientApproval {
    /// The tools that need approval.
    tools: BTreeSet<String>,
}

impl ApproveCall for ClientApproval {
    fn needs(&self, tool: &str) -> bool {
        self.tools.contains(tool)
    }

    fn ask(
        &self,
        tool: String,
        arguments: String,
        context: CallContext,
    ) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async move {
            // Arguments that are not an object are refused by the call itself, unasked.
            let Ok(arguments) = Arguments::parse(&arguments) else {
                return Ok(());
            };
            let not_run = format!("the call of `{tool}` did not run: it needs approval");
            let Some(asker) = context.asker else {
                return Err(format!("{not_run}, and there is no client to ask"));
            };
            let request = approval::request(&tool, &arguments);
            match asker.ask(&tool, &request).await {
                Ok(answer) => match answer.get("action").and_then(Value::as_str) {
                    Some("accept") => Ok(()),
                    action => Err(format!(
                        "{not_run}, and the client answered `{}` when asked",
                        action.unwrap_or("nothing")
                    )),
                },
                Err(error) => Err(format!("{not_run}, which the client cannot give: {error}")),
            }
        })
    }
}
