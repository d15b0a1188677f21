//! The wire formats' decoders, reachable from the fuzz targets (`fuzz/`) without a server:
//! the same parser, events and answers [`WireProvider`](super::WireProvider) runs on what a
//! model server sends. Not part of the API.

use serde_json::Value;

use super::sse::Parser;
use super::wire::WireFormat;
use super::{Anthropic, ChatResponse, OpenAi};

/// Decodes `bytes` as a streamed OpenAI answer (an event stream of chat-completion chunks).
pub fn decode_openai_stream(bytes: &[u8]) -> Result<ChatResponse, String> {
    decode_stream::<OpenAi>(bytes)
}

/// Decodes `bytes` as a streamed Anthropic answer (an event stream of message events).
pub fn decode_anthropic_stream(bytes: &[u8]) -> Result<ChatResponse, String> {
    decode_stream::<Anthropic>(bytes)
}

/// Decodes `bytes` as a whole OpenAI answer (a chat completion).
pub fn decode_openai_body(bytes: &[u8]) -> Result<ChatResponse, String> {
    decode_body::<OpenAi>(bytes)
}

/// Decodes `bytes` as a whole Anthropic answer (a message).
pub fn decode_anthropic_body(bytes: &[u8]) -> Result<ChatResponse, String> {
    decode_body::<Anthropic>(bytes)
}

/// What `HttpClient::events` and `send` do with a stream: the bytes arrive in two reads (split
/// in the middle, so that lines and characters get split too), each event goes to the format
/// until it says the stream is over, and an unfinished event at the end is an error.
fn decode_stream<F: WireFormat>(bytes: &[u8]) -> Result<ChatResponse, String> {
    let mut parser = Parser::default();
    let mut stream = F::Stream::default();
    let mut text = String::new();
    let mut on_text = |delta: &str| text.push_str(delta);
    let (first, second) = bytes.split_at(bytes.len() / 2);
    'reads: for read in [first, second] {
        for event in parser.feed(read).map_err(|e| e.message)? {
            if F::apply(&mut stream, &event, &mut on_text).map_err(|e| e.message)? {
                break 'reads;
            }
        }
    }
    if parser.has_partial() {
        return Err("the stream ended in the middle of an event".to_owned());
    }
    F::finish(stream).map_err(|e| e.message)
}

/// What `HttpClient::json` and the format do with a whole body.
fn decode_body<F: WireFormat>(bytes: &[u8]) -> Result<ChatResponse, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    F::parse(value).map_err(|e| e.message)
}
