//! What a client sends as a bearer token to `host mcp --http` as a resource server, and what
//! an authorization server answers as its metadata and key set: any bytes, split at `0xFF`
//! into the three. The decoders and checks must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost::mcp::server::auth::fuzzing::access_token;

fuzz_target!(|data: &[u8]| access_token(data));
