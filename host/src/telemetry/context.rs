//! W3C trace context (`traceparent`, `tracestate`): read from what a request carries (MCP's
//! `_meta`, HTTP headers) and passed on (an upstream MCP server's `_meta`, a model's and a
//! tool's HTTP requests), through the text-map propagator the application installs
//! (`opentelemetry::global`; without one, nothing is read nor written).
//!
//! A value that is not one (malformed, or longer than [`MAX_VALUE`]) is ignored: the request
//! goes on as one with no trace context, never an error.

use std::collections::HashMap;

use opentelemetry::Context;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::TraceContextExt as _;
use serde_json::{Map, Value};

/// The longest `traceparent` or `tracestate` read; a longer one is ignored. (A `traceparent`
/// is 55 characters; a `tracestate` of 32 entries at their longest is 512.)
pub const MAX_VALUE: usize = 512;

/// The keys of W3C trace context.
const KEYS: [&str; 2] = ["traceparent", "tracestate"];

/// The trace context a request carries: `_meta`'s when it holds a valid one, else the HTTP
/// headers'; the empty context when neither does.
pub fn extract(meta: Option<&Map<String, Value>>, headers: Option<&http::HeaderMap>) -> Context {
    let from = |carrier: &dyn Extractor| {
        opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(carrier))
    };
    if let Some(meta) = meta {
        let context = from(&MetaCarrier(meta));
        if context.span().span_context().is_valid() {
            return context;
        }
    }
    match headers {
        Some(headers) => from(&HeaderCarrier(headers)),
        None => Context::new(),
    }
}

/// `traceparent` and `tracestate` of the current span (the current OpenTelemetry context),
/// to pass on; empty without a propagator or a span.
pub fn current() -> HashMap<String, String> {
    let mut fields = HashMap::new();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&Context::current(), &mut fields);
    });
    fields.retain(|key, _| KEYS.contains(&key.as_str()));
    fields
}

/// Adds the current trace context to `headers` (see [`current`]).
pub fn inject_headers(headers: &mut http::HeaderMap) {
    for (key, value) in current() {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            headers.insert(name, value);
        }
    }
}

/// Adds the current trace context to an MCP request's `_meta` (see [`current`]), replacing
/// any the request had.
pub fn inject_meta(meta: &mut Map<String, Value>) {
    for (key, value) in current() {
        meta.insert(key, Value::String(value));
    }
}

struct MetaCarrier<'a>(&'a Map<String, Value>);

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        let value = self.0.get(key)?.as_str()?;
        (value.len() <= MAX_VALUE).then_some(value)
    }

    fn keys(&self) -> Vec<&str> {
        KEYS.into_iter()
            .filter(|key| self.0.contains_key(*key))
            .collect()
    }
}

struct HeaderCarrier<'a>(&'a http::HeaderMap);

impl Extractor for HeaderCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        let value = self.0.get(key)?.to_str().ok()?;
        (value.len() <= MAX_VALUE).then_some(value)
    }

    fn keys(&self) -> Vec<&str> {
        KEYS.into_iter()
            .filter(|key| self.0.contains_key(*key))
            .collect()
    }
}

// The SDK's propagator is the binary's (the `cli` feature), as the host installs it.
#[cfg(all(test, feature = "cli"))]
mod tests {
    use super::*;
    use opentelemetry_sdk::propagation::TraceContextPropagator;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn trace_of(context: &Context) -> Option<String> {
        let span = context.span();
        let span = span.span_context();
        span.is_valid().then(|| span.trace_id().to_string())
    }

    fn meta(value: Value) -> Map<String, Value> {
        Map::from_iter([("traceparent".to_owned(), value)])
    }

    #[test]
    fn meta_wins_over_headers_and_bad_values_are_ignored() {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let mut headers = http::HeaderMap::new();
        let header = "00-11111111111111111111111111111111-2222222222222222-01";
        headers.insert("traceparent", header.parse().expect("a header value"));
        let both = extract(Some(&meta(PARENT.into())), Some(&headers));
        let from_meta = "0af7651916cd43dd8448eb211c80319c";
        assert_eq!(trace_of(&both).as_deref(), Some(from_meta));

        let fallback = extract(Some(&meta("00-zz".into())), Some(&headers));
        let from_header = "11111111111111111111111111111111";
        assert_eq!(trace_of(&fallback).as_deref(), Some(from_header));

        let long = format!("{PARENT}{}", "-x".repeat(MAX_VALUE));
        assert_eq!(trace_of(&extract(Some(&meta(long.into())), None)), None);
        assert_eq!(trace_of(&extract(Some(&meta(7.into())), None)), None);
        let zeros = "00-00000000000000000000000000000000-b7ad6b7169203331-01";
        assert_eq!(trace_of(&extract(Some(&meta(zeros.into())), None)), None);
        assert_eq!(trace_of(&extract(None, None)), None);
    }
}
