//! What an MCP server writes on its stdout, as the client reads it: lines (some over the
//! line limit), JSON-RPC messages, `tools/call` results turned into tool output, `tools/list`
//! results turned into specs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost::mcp::client::fuzzing::receive;
use toolhost_fuzz::block_on;

/// Small, so that short inputs reach the handling of oversized lines too.
const MAX_LINE: usize = 512;
const MAX_RESULT: usize = 256;

fuzz_target!(|bytes: &[u8]| {
    let received = block_on(receive(bytes, MAX_LINE, MAX_RESULT));
    let lines = bytes.split(|&b| b == b'\n').count();
    assert!(
        received.messages <= lines,
        "{received:?} from {lines} lines"
    );
});
