//! A program's tool calls answered by a toolbox: each one a real call, of a tool the run
//! offers, its arguments checked against the tool's schema, run in its own sandbox.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::future::BoxFuture;

use crate::error::CallError;
use crate::sandbox::{
    NestedCalls, NestedError, NestedErrorKind, NestedOutcome, NestedResult, Observer, Progress,
};
use crate::source::{CallContext, ToolOutput};
use crate::toolbox::Toolbox;

/// Answers a program's calls from `toolbox`, for the tools in `offered` only.
pub struct ToolboxCalls {
    toolbox: Arc<Toolbox>,
    offered: Arc<BTreeSet<String>>,
    context: CallContext,
    /// Told of each call that ends, as progress of the program's own call.
    progress: Option<(Observer, String, Arc<AtomicU32>)>,
    /// Asked before a call of a tool that needs approval runs.
    approval: Option<Arc<dyn ApproveCall>>,
}

/// Whoever approves a program's calls of the tools that need it, while the program waits
/// (over MCP, the client of a session: the question `host mcp` asks before a plain call).
pub trait ApproveCall: Send + Sync {
    /// Whether calls of `tool` need approval.
    fn needs(&self, tool: &str) -> bool;

    /// Asks whether the call of `tool` with `arguments` (JSON text), made in `context`, may
    /// run: `Err` with what the program is told (a `denied` error) when it may not.
    fn ask(
        &self,
        tool: String,
        arguments: String,
        context: CallContext,
    ) -> BoxFuture<'static, Result<(), String>>;
}

impl ToolboxCalls {
    /// Calls of the tools named in `offered`, through `toolbox`, with `context` (its call id
    /// is the program's; each call gets `<id>.<n>`).
    pub fn new(toolbox: Arc<Toolbox>, offered: BTreeSet<String>, context: CallContext) -> Self {
        Self {
            toolbox,
            offered: Arc::new(offered),
            context,
            progress: None,
            approval: None,
        }
    }

    /// The same, asking `approval` before a call of a tool that needs it runs; a call that
    /// is not approved is `denied`, an error the program can catch.
    pub fn with_approval(mut self, approval: Arc<dyn ApproveCall>) -> Self {
        self.approval = Some(approval);
        self
    }

    /// The same, telling `observer` as each call ends: progress of `program` (the tool the
    /// program runs as), one unit per call, the call's tool and outcome as its message. The
    /// calls themselves report to no one (their own progress would interleave with it).
    pub fn with_progress(mut self, observer: Observer, program: &str) -> Self {
        self.progress = Some((observer, program.to_owned(), Arc::default()));
        self
    }
}

impl NestedCalls for ToolboxCalls {
    fn call(
        &self,
        index: u32,
        name: String,
        arguments: String,
    ) -> BoxFuture<'static, NestedOutcome> {
        let toolbox = self.toolbox.clone();
        let offered = self.offered.clone();
        let context = CallContext {
            call_id: nested_id(&self.context.call_id, index),
            observer: None,
            ..self.context.clone()
        };
        let progress = self.progress.clone();
        let approval = self
            .approval
            .clone()
            .filter(|approval| approval.needs(&name));
        Box::pin(async move {
            let asked = match approval {
                Some(approval) if offered.contains(&name) => {
                    approval
                        .ask(name.clone(), arguments.clone(), context.clone())
                        .await
                }
                _ => Ok(()),
            };
            let ended = if !offered.contains(&name) {
                Err(not_offered(&name, &offered))
            } else if let Err(message) = asked {
                Err(NestedError {
                    kind: NestedErrorKind::Denied,
                    message,
                })
            } else {
                outcome(toolbox.call(&name, &arguments, &context).await)
            };
            if let Some((observer, program, done)) = progress {
                let done = done.fetch_add(1, Ordering::Relaxed) + 1;
                let how = match &ended {
                    Ok(_) => "ok",
                    Err(error) => error.kind.as_str(),
                };
                let progress = Progress {
                    done: f64::from(done),
                    total: None,
                    message: Some(format!("{name}: {how}")),
                };
                observer.0.progress(&program, &progress);
            }
            ended
        })
    }
}

/// The id of a program's call number `index`: the program's own, then `.index`.
pub(crate) fn nested_id(program: &str, index: u32) -> String {
    format!("{program}.{index}")
}

/// The error of a call of `name`, which is not among `offered`.
pub(crate) fn not_offered(name: &str, offered: &BTreeSet<String>) -> NestedError {
    NestedError {
        kind: NestedErrorKind::NotOffered,
        message: CallError::UnknownTool {
            name: name.to_owned(),
            available: offered.iter().cloned().collect(),
        }
        .model_message(),
    }
}

/// What the program is told of a call that ended in `result`.
pub(crate) fn outcome(result: Result<ToolOutput, CallError>) -> NestedOutcome {
    match result {
        Ok(output) if output.input_required.is_some() => Err(NestedError {
            kind: NestedErrorKind::Failed,
            message: "the tool asks the person for input, which a program cannot give; call it \
                      directly instead"
                .to_owned(),
        }),
        Ok(output) => Ok(NestedResult {
            structured: output.structured.as_ref().map(ToString::to_string),
            text: output.text,
        }),
        Err(error) => Err(NestedError {
            kind: match &error {
                CallError::UnknownTool { .. } => NestedErrorKind::NotOffered,
                CallError::InvalidArguments { .. } => NestedErrorKind::InvalidArguments,
                _ => NestedErrorKind::Failed,
            },
            message: error.model_message(),
        }),
    }
}
