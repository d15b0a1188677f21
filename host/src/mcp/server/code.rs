//! Code mode over MCP: `host mcp` serving `run_code` (when the host's code mode is on), so the
//! client's model can write one program that calls the served tools. The program may call the
//! tools the caller may use; each of its calls is a real call (schema, sandbox, limits), is
//! told to the client as progress of the program's call, and is written to the audit log with
//! the program's call as its parent.

use std::collections::BTreeSet;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};

use crate::agent::{AuditSink as _, ServedCall};
use crate::arguments::Arguments;
use crate::code::{CodeMode, ToolboxCalls};
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

/// Runs the program in `arguments` with the tools in `offered`, reporting to the context's
/// observer; its calls are audited under `context.call_id`.
pub(super) async fn run(
    host: &Host,
    code: &CodeMode,
    offered: BTreeSet<String>,
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
