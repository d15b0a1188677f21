//! A whole (not streamed) model answer, read by both wire formats' decoders.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost::llm::fuzzing::{decode_anthropic_body, decode_openai_body};

fuzz_target!(|bytes: &[u8]| {
    for decoded in [decode_openai_body(bytes), decode_anthropic_body(bytes)] {
        if let Ok(answer) = decoded {
            for call in &answer.tool_calls {
                assert!(
                    !call.name.is_empty(),
                    "a tool call without a name: {answer:?}"
                );
            }
        }
    }
});
