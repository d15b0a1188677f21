//! A saved conversation with a paused run (what `host run` writes for approvals, and an
//! application stores between requests): read, its pending calls listed and decided, then
//! saved and read again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost::agent::Conversation;

fuzz_target!(|text: &str| {
    let Ok(mut conversation) = Conversation::from_json(text) else {
        return;
    };
    let _ = (conversation.turns(), conversation.pending_calls().len());
    let _ = conversation.check_answered();
    if let Some(run) = conversation.paused_run() {
        let _ = (
            run.run_id(),
            run.rounds(),
            run.executions(),
            run.invalid_calls(),
        );
    }
    let pending: Vec<(String, usize)> = conversation
        .pending_approvals()
        .iter()
        .map(|call| (call.call_id.clone(), call.holdings().len()))
        .collect();
    for (index, (id, _)) in pending.iter().enumerate() {
        let _ = match index % 3 {
            0 => conversation.approve(id),
            1 => conversation.approve_for_run(id),
            _ => conversation.reject(id, "no"),
        };
    }
    let saved = serde_json::to_string(&conversation).expect("a conversation can be saved");
    if let Err(error) = Conversation::from_json(&saved) {
        panic!(
            "a conversation read from {text} was saved as {saved}, which cannot be read: {error}"
        );
    }
});
