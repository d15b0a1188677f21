//! A component's result as the host checks it (tool contract 0.2): parts of every kind with
//! any media type, bytes, URI and text, structured content against an output schema, all
//! under a result-size limit. Whatever the parts, the check ends in a result or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost::engine_fuzzing::check_result;

const MAX_RESULT: usize = 2048;

fuzz_target!(|bytes: &[u8]| {
    if let Ok((text, parts)) = check_result(bytes, MAX_RESULT) {
        // What a model reads is made of what the tool gave, within the limit (a note per
        // part that is not text adds a few dozen bytes).
        assert!(text.len() <= MAX_RESULT + 200 * parts, "{} bytes", text.len());
        assert!(parts < 8);
    }
});
