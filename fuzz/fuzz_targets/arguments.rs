//! Tool arguments as a model or an MCP client sends them: parsed, checked against each
//! tool's schema, and when they fit, passed to the tool.
//!
//! The check does not promise that the tool can read what it lets through: a JSON Schema
//! says `"format": "int64"` for an `i64` and validators do not check formats, so
//! `{"a": 9226744073709551614}` passes and the tool answers with an invalid-arguments error
//! (found by this target). Such an error must name the problem.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use toolhost::{Arguments, CallContext, CallError, SourceOptions, Toolbox};
use toolhost_fuzz::{TOOL_NAMES, block_on, native_tools, wasm_runtime};

fn toolbox() -> &'static Toolbox {
    static TOOLBOX: OnceLock<Toolbox> = OnceLock::new();
    TOOLBOX.get_or_init(|| {
        block_on(
            Toolbox::builder(wasm_runtime())
                .source(Arc::new(native_tools()), SourceOptions::default())
                .build(),
        )
        .expect("a toolbox of native tools")
    })
}

fuzz_target!(|text: &str| {
    let Ok(arguments) = Arguments::parse(text) else {
        return;
    };
    let toolbox = toolbox();
    for name in TOOL_NAMES {
        if toolbox.check_arguments(name, &arguments).is_err() {
            continue;
        }
        let called = block_on(toolbox.call_parsed(name, &arguments, &CallContext::default()));
        if let Err(error @ CallError::InvalidArguments { .. }) = &called {
            assert!(!error.to_string().is_empty(), "an empty error for {text}");
        }
    }
});
