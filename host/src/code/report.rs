//! What the model is told of a program's run, in one tool result.

use serde_json::{Value, json};

use crate::engine::runner::ProgramRun;
use crate::sandbox::NestedCall;

/// The longest message kept of a failed call in the report, in characters.
const MAX_CALL_ERROR: usize = 300;

/// One JSON text: `result` (or `error`), `printed` when the program printed, and `calls`,
/// each call's tool and `ok` or its error; `Err` when the program gave no result.
pub(super) fn report(run: &ProgramRun) -> Result<String, String> {
    let mut report = serde_json::Map::new();
    let calls: Vec<Value> = run.calls.iter().map(call).collect();
    let ok = match &run.result {
        Ok(value) => {
            report.insert("result".to_owned(), value.clone());
            true
        }
        Err(error) => {
            report.insert("error".to_owned(), Value::String(error.model_message()));
            false
        }
    };
    if !run.printed.is_empty() {
        report.insert("printed".to_owned(), Value::String(run.printed.clone()));
    }
    report.insert("calls".to_owned(), Value::Array(calls));
    let text = Value::Object(report).to_string();
    if ok { Ok(text) } else { Err(text) }
}

fn call(call: &NestedCall) -> Value {
    match &call.outcome {
        Some(Ok(_)) => json!({"tool": call.tool, "ok": true}),
        Some(Err(error)) => {
            let message: String = error.message.chars().take(MAX_CALL_ERROR).collect();
            json!({"tool": call.tool, "error": error.kind, "message": message})
        }
        None => json!({"tool": call.tool, "error": "stopped"}),
    }
}
