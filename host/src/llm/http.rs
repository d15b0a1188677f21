//! HTTP for model servers: JSON requests with retries, timeouts and readable errors, and
//! event streams.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::error::KeyOrigin;
use super::error::{WireError, excerpt};
use super::{ProviderError, sse};

/// How requests to a model server are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// The most a request may take until its answer is complete (not streamed), or until the
    /// first byte (streamed). Default 300 s: a small local model on a slow CPU can be slow.
    pub timeout: Duration,
    /// For streamed answers, the longest silence between two chunks. Default 120 s.
    pub idle_timeout: Duration,
    /// How many times to retry after a 408, 429, 500, 502, 503, 504 or 529 answer, or a failed
    /// connection. Default 3.
    pub max_retries: u32,
    /// The wait before the first retry; it doubles with each one. Default 500 ms.
    pub initial_backoff: Duration,
    /// The longest wait, including one a server asks for with `Retry-After`. Default 60 s.
    pub max_backoff: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(120),
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
        }
    }
}

/// A client for one server.
#[derive(Debug, Clone)]
pub(crate) struct HttpClient {
    client: reqwest::Client,
    options: HttpOptions,
    /// Where the key sent to the server came from, for a 401 or 403.
    key: KeyOrigin,
    /// The server's base URL, for messages.
    pub(crate) server: String,
}

impl HttpClient {
    pub(crate) fn new(
        server: &str,
        options: HttpOptions,
        key: KeyOrigin,
    ) -> Result<Self, ProviderError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .build()
            .map_err(|source| ProviderError::Client {
                server: server.to_owned(),
                source,
            })?;
        Ok(Self {
            client,
            options,
            key,
            server: server.to_owned(),
        })
    }

    /// POSTs `body` (JSON) to `url`, retrying as [`HttpOptions`] says, and returns the first
    /// successful response (its body not read yet).
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
        stream: bool,
    ) -> Result<reqwest::Response, ProviderError> {
        let body = bytes::Bytes::from(body);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut request = self
                .client
                .post(url)
                .header("content-type", "application/json")
                .body(body.clone());
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            if !stream {
                request = request.timeout(self.options.timeout);
            }
            let sent = tokio::time::timeout(self.options.timeout, request.send()).await;
            let (retryable, error, wait) = match sent {
                Err(_) => (true, self.timeout(), None),
                Ok(Err(error)) if error.is_timeout() => (true, self.timeout(), None),
                Ok(Err(source)) => (true, self.connection(source), None),
                Ok(Ok(response)) if response.status().is_success() => return Ok(response),
                Ok(Ok(response)) => {
                    let status = response.status().as_u16();
                    let wait = retry_after(response.headers());
                    let text = match response.text().await {
                        Ok(text) => text,
                        Err(error) => format!("(the error body could not be read: {error})"),
                    };
                    let error = self.status_error(status, &text, attempt);
                    let retryable = matches!(status, 408 | 429 | 500 | 502 | 503 | 504 | 529)
                        && !matches!(error, ProviderError::ToolsNotSupported { .. });
                    (retryable, error, wait)
                }
            };
            if !retryable || attempt > self.options.max_retries {
                return Err(error);
            }
            let backoff = self.options.initial_backoff * 2u32.saturating_pow(attempt - 1);
            let wait = wait.unwrap_or(backoff).min(self.options.max_backoff);
            tracing::warn!(server = %self.server, attempt, ?wait, "retrying after: {error}");
            tokio::time::sleep(wait).await;
        }
    }

    /// Reads a whole JSON body.
    pub(crate) async fn json(&self, response: reqwest::Response) -> Result<Value, ProviderError> {
        let bytes = match tokio::time::timeout(self.options.timeout, response.bytes()).await {
            Err(_) => return Err(self.timeout()),
            Ok(Err(error)) if error.is_timeout() => return Err(self.timeout()),
            Ok(Err(source)) => return Err(self.disconnected(source)),
            Ok(Ok(bytes)) => bytes,
        };
        serde_json::from_slice(&bytes).map_err(|source| {
            self.protocol(WireError::with_source(
                format!(
                    "the body is not JSON: {}",
                    excerpt(&String::from_utf8_lossy(&bytes))
                ),
                source,
            ))
        })
    }

    /// Reads an event stream, handing each event to `on_event` until it returns `true` (the
    /// stream's end marker) or the stream ends.
    pub(crate) async fn events(
        &self,
        mut response: reqwest::Response,
        mut on_event: impl FnMut(sse::Event) -> Result<bool, ProviderError>,
    ) -> Result<(), ProviderError> {
        let mut parser = sse::Parser::default();
        loop {
            let chunk =
                match tokio::time::timeout(self.options.idle_timeout, response.chunk()).await {
                    Err(_) => {
                        return Err(ProviderError::Timeout {
                            server: self.server.clone(),
                            limit: self.options.idle_timeout,
                            stalled: true,
                        });
                    }
                    Ok(Err(source)) => return Err(self.disconnected(source)),
                    Ok(Ok(None)) => {
                        if parser.has_partial() {
                            return Err(self.protocol(
                                "the stream ended in the middle of an event"
                                    .to_owned()
                                    .into(),
                            ));
                        }
                        return Ok(());
                    }
                    Ok(Ok(Some(chunk))) => chunk,
                };
            for event in parser.feed(&chunk).map_err(|e| self.protocol(e))? {
                if on_event(event)? {
                    return Ok(());
                }
            }
        }
    }

    /// A protocol error from this server.
    pub(crate) fn protocol(&self, error: WireError) -> ProviderError {
        ProviderError::Protocol {
            server: self.server.clone(),
            message: error.message,
            source: error.source,
        }
    }

    fn timeout(&self) -> ProviderError {
        ProviderError::Timeout {
            server: self.server.clone(),
            limit: self.options.timeout,
            stalled: false,
        }
    }

    fn connection(&self, source: reqwest::Error) -> ProviderError {
        ProviderError::Connection {
            server: self.server.clone(),
            source,
        }
    }

    fn disconnected(&self, source: reqwest::Error) -> ProviderError {
        ProviderError::Disconnected {
            server: self.server.clone(),
            source,
        }
    }

    fn status_error(&self, status: u16, body: &str, attempts: u32) -> ProviderError {
        let message = error_message(body);
        if mentions_tools_unsupported(&message) {
            return ProviderError::ToolsNotSupported {
                server: self.server.clone(),
                message,
            };
        }
        if matches!(status, 401 | 403) {
            return ProviderError::Unauthorized {
                server: self.server.clone(),
                status,
                message,
                key: self.key.clone(),
            };
        }
        ProviderError::Status {
            server: self.server.clone(),
            status,
            message,
            attempts,
        }
    }
}

/// The message of an error body: OpenAI's and llama.cpp's `{"error": {"message"}}`,
/// Anthropic's `{"type": "error", "error": {"message"}}`, `{"error": "..."}`, or the start
/// of the text.
fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let found = parsed.as_ref().and_then(|value| {
        let error = value.get("error")?;
        error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str())
            .map(str::to_owned)
    });
    match found {
        Some(message) => message,
        None if body.trim().is_empty() => "(empty body)".to_owned(),
        None => body.trim().chars().take(300).collect(),
    }
}

/// Whether a server's error message says the model cannot use tools (Ollama: "does not
/// support tools"; llama.cpp without --jinja: "tools param requires --jinja flag"; others:
/// "tool use is not supported", "tools are not supported").
fn mentions_tools_unsupported(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("tool")
        && [
            "not support",
            "unsupported",
            "requires --jinja",
            "does not support",
        ]
        .iter()
        .any(|phrase| message.contains(phrase))
}

/// A `Retry-After` (seconds or an HTTP date) or `retry-after-ms` header, as a wait.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    let value = text("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return Some(Duration::from_secs_f64(seconds.max(0.0)));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_come_out_of_every_format() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","type":"auth"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message("Bad Gateway"), "Bad Gateway");
        assert_eq!(error_message(""), "(empty body)");
    }

    #[test]
    fn tool_support_errors_are_recognised() {
        assert!(mentions_tools_unsupported(
            "registry.ollama.ai/library/gemma:2b does not support tools"
        ));
        assert!(mentions_tools_unsupported(
            "tools param requires --jinja flag"
        ));
        assert!(!mentions_tools_unsupported("Invalid API key"));
    }

    #[tokio::test]
    async fn a_failed_connection_says_what_to_check_and_keeps_its_cause() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = format!("http://{}/v1", listener.local_addr().unwrap());
        drop(listener);
        let options = HttpOptions {
            max_retries: 0,
            ..HttpOptions::default()
        };
        let client = HttpClient::new(&server, options, KeyOrigin::None).unwrap();
        let error = client
            .post(
                &format!("{server}/chat/completions"),
                &[],
                b"{}".to_vec(),
                false,
            )
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("cannot reach {server}: check `base_url` and that the server is up")
        );
        let source = std::error::Error::source(&error).expect("the cause is kept");
        let reqwest = source
            .downcast_ref::<reqwest::Error>()
            .expect("as reqwest's error");
        assert!(reqwest.is_connect(), "{reqwest:?}");
    }

    #[test]
    fn refused_keys_and_other_statuses_are_told_apart() {
        let client = HttpClient::new(
            "https://api.example.com",
            HttpOptions::default(),
            KeyOrigin::Variable("EXAMPLE_KEY".into()),
        )
        .unwrap();
        let body = r#"{"error":{"message":"bad key"}}"#;
        for status in [401, 403] {
            let error = client.status_error(status, body, 1);
            assert!(
                matches!(error, ProviderError::Unauthorized { .. }),
                "{status}: {error}"
            );
            assert!(
                error.to_string().ends_with(
                    "bad key; check the API key in the environment variable EXAMPLE_KEY"
                ),
                "{error}"
            );
        }
        assert!(matches!(
            client.status_error(404, body, 1),
            ProviderError::Status { status: 404, .. }
        ));
    }

    #[test]
    fn retry_after_accepts_seconds_and_milliseconds() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
    }
}
