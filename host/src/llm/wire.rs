//! One provider for every wire format: what differs between formats (URL, headers, request
//! body, answer, stream events) is a [`WireFormat`]; sending, retrying and streaming are the
//! same for all.

use std::marker::PhantomData;

use futures::future::BoxFuture;
use serde_json::Value;

use super::http::{HttpClient, HttpOptions};
use super::sse::Event;
use super::{ChatRequest, ChatResponse, Provider, ProviderError};

/// What a wire format decides.
pub trait WireFormat: Send + Sync + 'static {
    /// The format's name, for messages.
    const NAME: &'static str;

    /// The state of a streamed answer being assembled.
    type Stream: Default + Send;

    /// The endpoint's URL, from the base URL the user gives (no trailing slash).
    fn url(base: &str) -> String;

    /// The headers of every request.
    fn headers(api_key: Option<&str>) -> Vec<(&'static str, String)>;

    /// The JSON body of a request.
    fn body(model: &str, request: &ChatRequest) -> Value;

    /// Reads a whole (not streamed) answer.
    fn parse(value: &Value) -> Result<ChatResponse, String>;

    /// Takes one event of a streamed answer; `Ok(true)` when it is the stream's last.
    fn apply(
        stream: &mut Self::Stream,
        event: &Event,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, String>;

    /// The streamed answer, once the stream is over.
    fn finish(stream: Self::Stream) -> Result<ChatResponse, String>;
}

/// A model behind an endpoint of wire format `F`.
#[derive(Debug, Clone)]
pub struct WireProvider<F> {
    http: HttpClient,
    url: String,
    model: String,
    api_key: Option<String>,
    format: PhantomData<fn() -> F>,
}

impl<F: WireFormat> WireProvider<F> {
    /// `model` at `base_url`, sending `api_key` as the format sends keys when there is one.
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: Option<String>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        let base = base_url.trim_end_matches('/');
        Ok(Self {
            http: HttpClient::new(base, options)?,
            url: F::url(base),
            model: model.to_owned(),
            api_key,
            format: PhantomData,
        })
    }

    async fn send(
        &self,
        request: &ChatRequest,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ChatResponse, ProviderError> {
        let body = F::body(&self.model, request);
        let headers = F::headers(self.api_key.as_deref());
        let response = self
            .http
            .post(&self.url, &headers, &body, request.stream)
            .await?;
        if !request.stream {
            let value = self.http.json(response).await?;
            return F::parse(&value).map_err(|e| self.http.protocol(e));
        }
        let mut stream = F::Stream::default();
        self.http
            .events(response, |event| {
                F::apply(&mut stream, &event, on_text).map_err(|e| self.http.protocol(e))
            })
            .await?;
        F::finish(stream).map_err(|e| self.http.protocol(e))
    }
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
        Box::pin(self.send(request, on_text))
    }
}

/// An event's data as JSON.
pub(crate) fn event_json(event: &Event) -> Result<Value, String> {
    serde_json::from_str(&event.data)
        .map_err(|e| format!("a stream event is not JSON ({e}): {}", event.data))
}
