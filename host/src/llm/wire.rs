//! One provider for every wire format: what differs between formats (URL, headers, request
//! body, answer, stream events) is a [`WireFormat`]; sending, retrying and streaming are the
//! same for all. The formats are this crate's own: [`WireFormat`] is not public, so a
//! [`WireProvider`] speaks OpenAI's format or Anthropic's and nothing else.

use std::marker::PhantomData;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use opentelemetry::KeyValue;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::Instrument as _;

use super::error::{WireError, excerpt};
use super::http::{Flow, HttpClient, HttpOptions};
use super::sse::Event;
use super::{ApiKey, ChatRequest, ChatResponse, FinishReason, Provider, ProviderError};
use crate::telemetry::metrics::{key, metrics};

/// What a wire format decides.
pub(crate) trait WireFormat: Send + Sync + 'static {
    /// The format's name, for messages.
    const NAME: &'static str;

    /// The provider, as the GenAI conventions' `gen_ai.provider.name` names it.
    const PROVIDER: &'static str;

    /// The state of a streamed answer being assembled.
    type Stream: Default + Send;

    /// The endpoint's URL, from the base URL the user gives (no trailing slash).
    fn url(base: &str) -> String;

    /// The headers of every request.
    fn headers(api_key: Option<&ApiKey>) -> Vec<(&'static str, String)>;

    /// The body of a request.
    fn body<'a>(model: &'a str, request: &'a ChatRequest) -> impl Serialize + 'a;

    /// Reads a whole (not streamed) answer.
    fn parse(value: Value) -> Result<ChatResponse, WireError>;

    /// Takes one event of a streamed answer; `Ok(true)` when it is the stream's last.
    fn apply(
        stream: &mut Self::Stream,
        event: &Event,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, WireError>;

    /// The streamed answer, once the stream is over.
    fn finish(stream: Self::Stream) -> Result<ChatResponse, WireError>;

    /// How much of a streamed answer has come (a number that grows with every piece of it):
    /// an event that leaves it unchanged (a ping, an empty delta) does not keep the stream
    /// alive.
    fn progress(stream: &Self::Stream) -> usize;
}

/// A model behind an endpoint of wire format `F`: [`OpenAiProvider`](super::OpenAiProvider)
/// or [`AnthropicProvider`](super::AnthropicProvider).
#[derive(Debug, Clone)]
pub struct WireProvider<F> {
    http: HttpClient,
    url: String,
    model: String,
    api_key: Option<ApiKey>,
    format: PhantomData<fn() -> F>,
}

/// A provider of format `F` for `model` at `base_url`, sending `api_key` as the format sends
/// keys when there is one.
pub(crate) fn provider<F: WireFormat>(
    base_url: &str,
    model: &str,
    api_key: Option<ApiKey>,
    options: HttpOptions,
) -> Result<WireProvider<F>, ProviderError> {
    let base = base_url.trim_end_matches('/');
    Ok(WireProvider {
        http: HttpClient::new(base, options, ApiKey::origin(api_key.as_ref()))?,
        url: F::url(base),
        model: model.to_owned(),
        api_key,
        format: PhantomData,
    })
}

async fn send<F: WireFormat>(
    provider: &WireProvider<F>,
    request: &ChatRequest,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<ChatResponse, ProviderError> {
    let http = &provider.http;
    let body = serde_json::to_vec(&F::body(&provider.model, request)).map_err(|source| {
        http.protocol(WireError::with_source(
            "cannot encode the request".to_owned(),
            source,
        ))
    })?;
    let headers = F::headers(provider.api_key.as_ref());
    let answer = http.post(&provider.url, &headers, body).await?;
    if !request.stream {
        let value = http.json(answer).await?;
        return F::parse(value).map_err(|e| http.protocol(e));
    }
    let mut stream = F::Stream::default();
    http.events(answer, |event| {
        let before = F::progress(&stream);
        let done = F::apply(&mut stream, &event, on_text).map_err(|e| http.protocol(e))?;
        Ok(if done {
            Flow::Done
        } else if F::progress(&stream) != before {
            Flow::Progress
        } else {
            Flow::Nothing
        })
    })
    .await?;
    F::finish(stream).map_err(|e| http.protocol(e))
}

impl<F: WireFormat> Provider for WireProvider<F> {
    fn describe(&self) -> String {
        format!(
            "model `{}` at {} ({})",
            self.model,
            self.http.server,
            F::NAME
        )
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        // The GenAI conventions' client span; the server gets its trace context in the
        // request's headers.
        let span = tracing::info_span!(
            "model_chat",
            otel.name = %format_args!("chat {}", self.model),
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = F::PROVIDER,
            gen_ai.request.model = %self.model,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let recorded = span.clone();
        Box::pin(
            async move {
                let started = Instant::now();
                let result = send(self, request, on_text).await;
                record(F::PROVIDER, &self.model, &result, started.elapsed());
                traced(&recorded, &result);
                result
            }
            .instrument(span),
        )
    }
}

/// Reads `value` as a `T`. What does not fit is named by its path in the JSON, prefixed by
/// `within` (such as `a content_block_delta event`) when given:
/// `choices[0].message.tool_calls[1].function.name is missing`, or
/// `choices[0].delta.content: invalid type: integer `3`, expected a string`.
/// The request's [`ChatRequest::extra`] fields, but for those the format sets itself
/// (`fields`): those keep the format's value.
pub(crate) fn extra_fields(
    request: &ChatRequest,
    fields: &[&str],
) -> serde_json::Map<String, Value> {
    request
        .extra
        .iter()
        .filter(|(name, _)| !fields.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

pub(crate) fn decode<T: DeserializeOwned>(
    value: Value,
    within: Option<&str>,
) -> Result<T, WireError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner().to_string();
        // serde says `missing field `name`` (and, reading a `Value`, gives no position).
        let missing = inner
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'));
        let message = match (missing, path.as_str()) {
            (Some(field), ".") => format!("{field} is missing"),
            (Some(field), path) => format!("{path}.{field} is missing"),
            (None, ".") => inner,
            (None, path) => format!("{path}: {inner}"),
        };
        match within {
            Some(within) => format!("in {within}, {message}"),
            None => message,
        }
        .into()
    })
}

/// An event's data as JSON.
pub(crate) fn event_json(event: &Event) -> Result<Value, WireError> {
    serde_json::from_str(&event.data).map_err(|source| {
        WireError::with_source(
            format!("a stream event is not JSON: {}", excerpt(&event.data)),
            source,
        )
    })
}

/// Records on a model request's span what it ended with: its tokens and why it stopped, or
/// the kind of its error.
fn traced(span: &tracing::Span, result: &Result<ChatResponse, ProviderError>) {
    match result {
        Ok(response) => {
            if let Some(usage) = response.usage {
                span.record("gen_ai.usage.input_tokens", usage.input_tokens);
                span.record("gen_ai.usage.output_tokens", usage.output_tokens);
            }
            let finish = match &response.finish {
                FinishReason::Stop => "stop",
                FinishReason::ToolCalls => "tool_calls",
                FinishReason::Length => "length",
                FinishReason::Other(other) => other.as_str(),
            };
            span.record("gen_ai.response.finish_reasons", finish);
        }
        Err(error) => {
            span.record("error.type", error.kind().as_str());
            span.record("otel.status_code", "ERROR");
        }
    }
}

/// Records a model request that ended with `result` after `took`: its duration and, when the
/// server reported them, its tokens (the GenAI conventions' metrics).
fn record(
    provider: &'static str,
    model: &str,
    result: &Result<ChatResponse, ProviderError>,
    took: Duration,
) {
    let mut attributes = vec![
        KeyValue::new(key::GEN_AI_OPERATION, "chat"),
        KeyValue::new(key::GEN_AI_PROVIDER, provider),
        KeyValue::new(key::GEN_AI_MODEL, model.to_owned()),
    ];
    let metrics = metrics();
    if let Ok(ChatResponse {
        usage: Some(usage), ..
    }) = result
    {
        for (kind, tokens) in [
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
        ] {
            attributes.push(KeyValue::new(key::TOKEN_TYPE, kind));
            metrics.gen_ai_tokens.record(tokens, &attributes);
            attributes.pop();
        }
    }
    if let Err(error) = result {
        attributes.push(KeyValue::new(key::ERROR_TYPE, error.kind().as_str()));
    }
    metrics
        .gen_ai_operation
        .record(took.as_secs_f64(), &attributes);
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)] // Read by Debug only.
    struct Outer {
        items: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        name: String,
    }

    #[test]
    fn decoding_names_the_field_that_does_not_fit() {
        let missing = decode::<Outer>(json!({"items": [{"name": "a"}, {}]}), None).unwrap_err();
        assert_eq!(missing.message, "items[1].name is missing");
        let wrong = decode::<Outer>(json!({"items": [{"name": 3}]}), Some("a chunk")).unwrap_err();
        assert_eq!(
            wrong.message,
            "in a chunk, items[0].name: invalid type: integer `3`, expected a string"
        );
        let top = decode::<Outer>(json!({}), None).unwrap_err();
        assert_eq!(top.message, "items is missing");
    }

    #[test]
    fn excerpts_are_bounded() {
        assert_eq!(excerpt(" short "), "short");
        let long = "é".repeat(500);
        assert_eq!(excerpt(&long).chars().count(), 203);
    }
}
