//! What a tool reports while its call runs (tool contract 0.2's `report`), as MCP
//! notifications: progress as `notifications/progress` with the request's progress token (none
//! without one), log lines as logging notifications at the client's level or above (none
//! when it wants none). The host bounds their rate where the tool reports
//! (`sandbox::report`); here they only change shape.

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::sandbox::{CallObserver, LogLevel, Observer, Progress};

/// A report of the tool's, on its way to the client.
pub(super) enum Report {
    Progress(Progress),
    Log {
        tool: String,
        level: LogLevel,
        message: String,
    },
}

/// Sends a call's reports to the task that answers the call.
struct Forward(mpsc::UnboundedSender<Report>);

impl CallObserver for Forward {
    fn progress(&self, _tool: &str, progress: &Progress) {
        // The answering task may be gone (the client went away): nothing to report to.
        let _ = self.0.send(Report::Progress(progress.clone()));
    }

    fn log(&self, tool: &str, level: LogLevel, message: &str) {
        let _ = self.0.send(Report::Log {
            tool: tool.to_owned(),
            level,
            message: message.to_owned(),
        });
    }
}

/// An observer for a call, and where its reports arrive. (The rate bound where the tool
/// reports keeps the channel short.)
pub(super) fn channel() -> (Observer, mpsc::UnboundedReceiver<Report>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    (Observer(std::sync::Arc::new(Forward(sender))), receiver)
}

/// A notification for `report`, if the client wants it: progress when the request has a
/// progress token, log lines at `level` or above.
pub(super) enum Notification {
    Progress(ProgressNotificationParam),
    Log(LoggingMessageNotificationParam),
}

impl Report {
    pub(super) fn notification(
        self,
        token: Option<&ProgressToken>,
        level: Option<LoggingLevel>,
    ) -> Option<Notification> {
        match self {
            Report::Progress(progress) => {
                let mut param = ProgressNotificationParam::new(token?.clone(), progress.done);
                param.total = progress.total;
                param.message = progress.message;
                Some(Notification::Progress(param))
            }
            Report::Log {
                tool,
                level: at,
                message,
            } => {
                let at = match at {
                    LogLevel::Debug => LoggingLevel::Debug,
                    LogLevel::Info => LoggingLevel::Info,
                    LogLevel::Notice => LoggingLevel::Notice,
                    LogLevel::Warning => LoggingLevel::Warning,
                    LogLevel::Error => LoggingLevel::Error,
                };
                (at as u8 >= level? as u8).then(|| {
                    Notification::Log(
                        LoggingMessageNotificationParam::new(at, Value::from(message))
                            .with_logger(tool),
                    )
                })
            }
        }
    }
}
