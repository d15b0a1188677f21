//! A streamed model answer (server-sent events of JSON chunks), read by both wire formats'
//! decoders: the same bytes as OpenAI chunks and as Anthropic events.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost::llm::fuzzing::{decode_anthropic_stream, decode_openai_stream};

fuzz_target!(|bytes: &[u8]| {
    for decoded in [decode_openai_stream(bytes), decode_anthropic_stream(bytes)] {
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
