//! HTTP for model servers: JSON requests with retries, timeouts and readable errors, and
//! event streams.

use std::time::Duration;

use tokio::time::Instant;

use serde_json::Value;

use super::error::KeyOrigin;
use super::error::{WireError, excerpt};
use super::retry::{backoff, retry_after};
use super::{ProviderError, sse};
use crate::telemetry::context;
use crate::tls;

/// How requests to a model server are made. Every wait on the server is bounded: the time to
/// its answer's headers and to the answer's end ([`timeout`](Self::timeout)), the time between
/// two pieces of a streamed answer ([`idle_timeout`](Self::idle_timeout)), the waits before
/// retries ([`max_backoff`](Self::max_backoff)); and so is what is held of an answer
/// ([`max_answer_size`](Self::max_answer_size)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// The most one answer may take, from sending the request to the answer's last byte,
    /// streamed or not (a retry starts it again). Default 300 s: a small local model on a slow
    /// CPU can be slow.
    pub timeout: Duration,
    /// For streamed answers, the longest time without any piece of the answer (text, a piece
    /// of a tool call, the end): keep-alive comments, pings and empty pieces do not count.
    /// Default 120 s.
    pub idle_timeout: Duration,
    /// How many times to retry after a 408, 429, 500, 502, 503, 504 or 529 answer, or a failed
    /// connection. Default 3.
    pub max_retries: u32,
    /// The wait before the first retry; it doubles with each one. Each wait is lengthened by a
    /// random part of up to as much again (jitter: many clients turned away together do not
    /// all come back together). Default 500 ms.
    pub initial_backoff: Duration,
    /// The longest wait before a retry (and never longer than [`timeout`](Self::timeout)).
    /// A server asking with `Retry-After` for a longer wait gets no retry: the request fails
    /// with [`ProviderError::RetryAfter`]. Default 60 s.
    pub max_backoff: Duration,
    /// The largest answer read, in bytes: a whole body, streamed (all its events together)
    /// or not. Past it the request fails with [`ProviderError::TooLarge`]. Default 16 MiB.
    pub max_answer_size: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(120),
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
            max_answer_size: 16 * 1024 * 1024,
        }
    }
}

/// How much of an error answer's body is read, for its message: the rest is never read.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// A successful answer whose body is still to be read, and when it must be read by.
#[derive(Debug)]
pub(crate) struct Answer {
    response: reqwest::Response,
    deadline: Instant,
}

/// What one event of a stream did to the answer being assembled.
pub(crate) enum Flow {
    /// It was the stream's last.
    Done,
    /// It added to the answer: the stream is alive.
    Progress,
    /// It added nothing (a ping, an empty piece).
    Nothing,
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
        let builder = tls::client_builder().map_err(|source| ProviderError::CaBundle {
            server: server.to_owned(),
            source,
        })?;
        let client = builder
            .connect_timeout(Duration::from_secs(15).min(options.timeout))
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
    /// successful answer (its body not read yet).
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
    ) -> Result<Answer, ProviderError> {
        let body = bytes::Bytes::from(body);
        let allowed = self.options.max_backoff.min(self.options.timeout);
        let mut waits = backoff(self.options.initial_backoff, allowed, None);
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
            // The trace this request is part of, for a server that traces its own.
            let mut traced = http::HeaderMap::new();
            context::inject_headers(&mut traced);
            request = request.headers(traced);
            let deadline = after(self.options.timeout);
            let sent = tokio::time::timeout_at(deadline, request.send()).await;
            let (retryable, error, asked) = match sent {
                Err(_) => (true, self.timeout(), None),
                Ok(Err(error)) if error.is_timeout() => (true, self.timeout(), None),
                Ok(Err(source)) if tls::is_untrusted_certificate(&source) => {
                    let server = self.server.clone();
                    (false, ProviderError::Untrusted { server, source }, None)
                }
                Ok(Err(source)) => (true, self.connection(source), None),
                Ok(Ok(response)) if response.status().is_success() => {
                    return Ok(Answer { response, deadline });
                }
                Ok(Ok(mut response)) => {
                    let status = response.status().as_u16();
                    let asked = retry_after(response.headers());
                    let text = match self.read(&mut response, ERROR_BODY_LIMIT, deadline).await {
                        Ok((bytes, _)) => String::from_utf8_lossy(&bytes).into_owned(),
                        Err(error) => format!("(the error body could not be read: {error})"),
                    };
                    let error = self.status_error(status, &text, attempt);
                    let retryable = matches!(status, 408 | 429 | 500 | 502 | 503 | 504 | 529)
                        && !matches!(error, ProviderError::ToolsNotSupported { .. });
                    (retryable, error, asked.map(|asked| (status, asked)))
                }
            };
            if !retryable || attempt > self.options.max_retries {
                return Err(error);
            }
            let wait = match asked {
                Some((status, asked)) if asked.is_none_or(|asked| asked > allowed) => {
                    return Err(ProviderError::RetryAfter {
                        server: self.server.clone(),
                        status,
                        asked,
                        allowed,
                    });
                }
                Some((_, Some(asked))) => asked,
                _ => waits.next().unwrap_or(allowed),
            };
            tracing::warn!(server = %self.server, attempt, ?wait, "retrying after: {error}");
            tokio::time::sleep(wait).await;
        }
    }

    /// Reads a whole JSON body.
    pub(crate) async fn json(&self, answer: Answer) -> Result<Value, ProviderError> {
        let Answer {
            mut response,
            deadline,
        } = answer;
        let limit = self.options.max_answer_size;
        let (bytes, complete) = self.read(&mut response, limit, deadline).await?;
        if !complete {
            return Err(self.too_large("an answer"));
        }
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

    /// Reads at most `limit` bytes of `response`'s body by `deadline`; says whether that was
    /// all of it (the rest is never read).
    async fn read(
        &self,
        response: &mut reqwest::Response,
        limit: usize,
        deadline: Instant,
    ) -> Result<(Vec<u8>, bool), ProviderError> {
        let mut bytes = Vec::new();
        loop {
            let chunk = match tokio::time::timeout_at(deadline, response.chunk()).await {
                Err(_) => return Err(self.timeout()),
                Ok(Err(error)) if error.is_timeout() => return Err(self.timeout()),
                Ok(Err(source)) => return Err(self.disconnected(source)),
                Ok(Ok(None)) => return Ok((bytes, true)),
                Ok(Ok(Some(chunk))) => chunk,
            };
            if bytes.len() + chunk.len() > limit {
                let room = limit - bytes.len();
                bytes.extend_from_slice(&chunk[..room]);
                return Ok((bytes, false));
            }
            bytes.extend_from_slice(&chunk);
        }
    }

    /// Reads an event stream, handing each event to `on_event` until it says the stream is
    /// [`Flow::Done`] or the stream ends. The answer must end by the request's deadline, and
    /// some event must add to it at least once per [`HttpOptions::idle_timeout`].
    pub(crate) async fn events(
        &self,
        answer: Answer,
        mut on_event: impl FnMut(sse::Event) -> Result<Flow, ProviderError>,
    ) -> Result<(), ProviderError> {
        let Answer {
            mut response,
            deadline,
        } = answer;
        let mut parser = sse::Parser::default();
        let mut alive_until = after(self.options.idle_timeout);
        // The whole stream is bounded as a whole body is: what it brings is kept until the
        // answer is assembled.
        let mut received = 0usize;
        loop {
            let until = deadline.min(alive_until);
            let chunk = match tokio::time::timeout_at(until, response.chunk()).await {
                Err(_) if alive_until < deadline => {
                    return Err(ProviderError::Timeout {
                        server: self.server.clone(),
                        limit: self.options.idle_timeout,
                        stalled: true,
                    });
                }
                Err(_) => return Err(self.timeout()),
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
                match on_event(event)? {
                    Flow::Done => return Ok(()),
                    Flow::Progress => alive_until = after(self.options.idle_timeout),
                    Flow::Nothing => {}
                }
            }
            if parser.pending() > self.options.max_answer_size {
                return Err(self.too_large("a stream event"));
            }
            received = received.saturating_add(chunk.len());
            if received > self.options.max_answer_size {
                return Err(self.too_large("a streamed answer"));
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

    fn too_large(&self, what: &'static str) -> ProviderError {
        ProviderError::TooLarge {
            server: self.server.clone(),
            what,
            limit: self.options.max_answer_size,
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

/// The instant `wait` from now: a timeout of a thousand years is no reason to panic.
fn after(wait: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(wait)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
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
            .post(&format!("{server}/chat/completions"), &[], b"{}".to_vec())
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

    #[tokio::test]
    async fn a_timeout_too_long_to_add_to_the_clock_is_no_panic() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = format!("http://{}/v1", listener.local_addr().unwrap());
        drop(listener);
        let options = HttpOptions {
            timeout: Duration::MAX,
            idle_timeout: Duration::MAX,
            max_retries: 0,
            ..HttpOptions::default()
        };
        let client = HttpClient::new(&server, options, KeyOrigin::None).unwrap();
        let error = client
            .post(&format!("{server}/chat/completions"), &[], b"{}".to_vec())
            .await
            .unwrap_err();
        assert!(matches!(error, ProviderError::Connection { .. }), "{error}");
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
}
