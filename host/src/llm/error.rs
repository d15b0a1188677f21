//! What can go wrong talking to a model, and where an API key came from (so that an error can
//! say which one to fix).

use std::fmt;
use std::time::Duration;

/// The cause of a [`ProviderError`] that is not a `reqwest` error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a request to a model failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The API key is not configured.
    #[error(
        "{provider} needs an API key: set the environment variable {variable}, or `api_key_env` \
         in the manifest's [model] section to the name of one that holds it"
    )]
    MissingApiKey {
        /// The provider.
        provider: &'static str,
        /// The environment variable it reads.
        variable: String,
    },

    /// The server refused the API key, or the request without one (401 or 403).
    #[error("{server} answered {status}: {message}; {}", key_advice(key))]
    Unauthorized {
        /// The server.
        server: String,
        /// The HTTP status: 401 or 403.
        status: u16,
        /// The error message from the body (or the start of the body).
        message: String,
        /// Where the key that was sent came from.
        key: KeyOrigin,
    },

    /// The server said the model cannot use tools.
    #[error(
        "{server} says the model cannot use tools ({message}); choose a model that supports \
         tool calling"
    )]
    ToolsNotSupported {
        /// The server.
        server: String,
        /// Its message.
        message: String,
    },

    /// The server answered with an error status.
    #[error("{server} answered {status}: {message}")]
    Status {
        /// The server.
        server: String,
        /// The HTTP status.
        status: u16,
        /// The error message from the body (or the start of the body).
        message: String,
        /// How many attempts were made (retries included).
        attempts: u32,
    },

    /// No answer came in time: the whole answer (streamed or not) took longer than the
    /// request's limit, or a streamed answer brought nothing of the answer (only keep-alive
    /// comments, pings or empty pieces, or nothing at all) for longer than the idle limit.
    #[error(
        "{server} {}; if the model needs longer, raise `timeout` in the manifest's [model] \
         section ({} in code)",
        waited(*stalled, *limit),
        if *stalled { "`HttpOptions::idle_timeout`" } else { "`HttpOptions::timeout`" }
    )]
    Timeout {
        /// The server.
        server: String,
        /// The limit.
        limit: Duration,
        /// Whether a streamed answer had begun and then went silent.
        stalled: bool,
    },

    /// The server asked to be retried later (`Retry-After`, `retry-after-ms`) than toolhost
    /// waits: the request fails at once instead of waiting past its own time limit.
    #[error(
        "{server} answered {status} and asked (Retry-After) for a wait of {}, longer than the \
         {} toolhost waits before a retry; try again later, or raise `timeout` in the manifest's \
         [model] section (`HttpOptions::timeout` and `HttpOptions::max_backoff` in code)",
        asked.map_or_else(|| "an unreadable length".to_owned(), |asked| humantime::format_duration(asked).to_string()),
        humantime::format_duration(*allowed)
    )]
    RetryAfter {
        /// The server.
        server: String,
        /// The HTTP status that came with the header.
        status: u16,
        /// The wait asked for; `None` when it is too long to represent (`inf`, `1e30`).
        asked: Option<Duration>,
        /// The longest wait allowed.
        allowed: Duration,
    },

    /// An answer, or one event of a streamed answer, was larger than the limit (a line that
    /// never ends, say): reading stopped there.
    #[error(
        "{server} sent {what} larger than {} and it was not read further; if the model's \
         answers are that large, raise `HttpOptions::max_answer_size`",
        Size(*limit)
    )]
    TooLarge {
        /// The server.
        server: String,
        /// What was too large: `an answer`, `a streamed answer` or `a stream event`.
        what: &'static str,
        /// The limit, in bytes.
        limit: usize,
    },

    /// The server could not be reached.
    #[error("cannot reach {server}: check `base_url` and that the server is up")]
    Connection {
        /// The server.
        server: String,
        /// What the HTTP client saw.
        #[source]
        source: reqwest::Error,
    },

    /// The server's TLS certificate was refused: not issued by a CA the host trusts (the
    /// platform's roots and [`TOOLHOST_CA_BUNDLE`](crate::tls::CA_BUNDLE_VARIABLE)), for
    /// another name, or expired. Not retried.
    #[error(
        "the TLS certificate of {server} is not trusted: {}",
        crate::tls::UNTRUSTED_ADVICE
    )]
    Untrusted {
        /// The server.
        server: String,
        /// What the HTTP client saw (rustls's reason under it).
        #[source]
        source: reqwest::Error,
    },

    /// The connection broke while the answer was coming in.
    #[error("the connection to {server} broke in the middle of the answer")]
    Disconnected {
        /// The server.
        server: String,
        /// What the HTTP client saw.
        #[source]
        source: reqwest::Error,
    },

    /// The HTTP client could not be set up (its TLS backend, say).
    #[error("cannot set up an HTTP client for {server}")]
    Client {
        /// The server.
        server: String,
        /// What the HTTP client library said.
        #[source]
        source: reqwest::Error,
    },

    /// The file of extra CA certificates cannot be used.
    #[error("cannot set up an HTTP client for {server}")]
    CaBundle {
        /// The server.
        server: String,
        /// What is wrong with the file.
        #[source]
        source: crate::tls::CaBundleError,
    },

    /// The answer did not follow the wire format.
    #[error("{server} sent an answer toolhost cannot read: {message}")]
    Protocol {
        /// The server.
        server: String,
        /// What is wrong with it, naming the field: `choices[0].message.tool_calls[1].function.name is missing`.
        message: String,
        /// The parser's error, when a body or event was not JSON or not text at all.
        #[source]
        source: Option<BoxError>,
    },

    /// The local model server could not be started.
    #[error("the local model server could not be used: {message}")]
    Local {
        /// What went wrong and what to do.
        message: String,
    },
}

/// The kind of a [`ProviderError`], for callers that branch on it and for JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ProviderErrorKind {
    /// [`ProviderError::MissingApiKey`].
    MissingApiKey,
    /// [`ProviderError::Unauthorized`].
    Unauthorized,
    /// [`ProviderError::ToolsNotSupported`].
    ToolsNotSupported,
    /// [`ProviderError::Status`].
    Status,
    /// [`ProviderError::Timeout`].
    Timeout,
    /// [`ProviderError::RetryAfter`].
    RetryAfter,
    /// [`ProviderError::TooLarge`].
    TooLarge,
    /// [`ProviderError::Connection`].
    Connection,
    /// [`ProviderError::Untrusted`].
    Untrusted,
    /// [`ProviderError::Disconnected`].
    Disconnected,
    /// [`ProviderError::Client`].
    Client,
    /// [`ProviderError::CaBundle`].
    CaBundle,
    /// [`ProviderError::Protocol`].
    Protocol,
    /// [`ProviderError::Local`].
    Local,
}

impl ProviderErrorKind {
    /// Its name: `missing_api_key`, `timeout`, ... (as it is serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MissingApiKey => "missing_api_key",
            Self::Unauthorized => "unauthorized",
            Self::ToolsNotSupported => "tools_not_supported",
            Self::Status => "status",
            Self::Timeout => "timeout",
            Self::RetryAfter => "retry_after",
            Self::TooLarge => "too_large",
            Self::Connection => "connection",
            Self::Untrusted => "untrusted",
            Self::Disconnected => "disconnected",
            Self::Client => "client",
            Self::CaBundle => "ca_bundle",
            Self::Protocol => "protocol",
            Self::Local => "local",
        }
    }
}

impl fmt::Display for ProviderErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ProviderError {
    /// The kind of error.
    pub fn kind(&self) -> ProviderErrorKind {
        match self {
            Self::MissingApiKey { .. } => ProviderErrorKind::MissingApiKey,
            Self::Unauthorized { .. } => ProviderErrorKind::Unauthorized,
            Self::ToolsNotSupported { .. } => ProviderErrorKind::ToolsNotSupported,
            Self::Status { .. } => ProviderErrorKind::Status,
            Self::Timeout { .. } => ProviderErrorKind::Timeout,
            Self::RetryAfter { .. } => ProviderErrorKind::RetryAfter,
            Self::TooLarge { .. } => ProviderErrorKind::TooLarge,
            Self::Connection { .. } => ProviderErrorKind::Connection,
            Self::Untrusted { .. } => ProviderErrorKind::Untrusted,
            Self::Disconnected { .. } => ProviderErrorKind::Disconnected,
            Self::Client { .. } => ProviderErrorKind::Client,
            Self::CaBundle { .. } => ProviderErrorKind::CaBundle,
            Self::Protocol { .. } => ProviderErrorKind::Protocol,
            Self::Local { .. } => ProviderErrorKind::Local,
        }
    }
}

fn waited(stalled: bool, limit: Duration) -> String {
    let limit = humantime::format_duration(limit);
    if stalled {
        format!("sent nothing for {limit} in the middle of a streamed answer")
    } else {
        format!("did not answer within {limit}")
    }
}

/// A byte count as a person reads it: `16 MiB`, `64 KiB`, `300 bytes`.
struct Size(usize);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const KIB: usize = 1024;
        match self.0 {
            n if n >= KIB * KIB && n % (KIB * KIB) == 0 => write!(f, "{} MiB", n / (KIB * KIB)),
            n if n >= KIB && n % KIB == 0 => write!(f, "{} KiB", n / KIB),
            n => write!(f, "{n} bytes"),
        }
    }
}

fn key_advice(key: &KeyOrigin) -> String {
    match key {
        KeyOrigin::Variable(variable) => {
            format!("check the API key in the environment variable {variable}")
        }
        KeyOrigin::Given => "check the API key set by `api_key` in the manifest's [model] \
                             section (or given to the provider in code)"
            .to_owned(),
        KeyOrigin::None => "no API key was sent: put one in an environment variable and name \
                            that variable in `api_key_env` in the manifest's [model] section"
            .to_owned(),
    }
}

/// An API key, and the environment variable it came from. Its `Debug` does not show the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// The key.
    pub value: String,
    /// The environment variable it was read from; `None` when it was given directly (the
    /// manifest's `api_key`, or code).
    pub variable: Option<String>,
}

impl ApiKey {
    /// A key given directly.
    pub fn new(value: impl Into<String>) -> Self {
        Self {
            value: value.into(),
            variable: None,
        }
    }

    /// A key read from the environment variable `variable`.
    pub fn from_variable(variable: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            value: value.into(),
            variable: Some(variable.into()),
        }
    }

    /// Where it came from, for errors.
    pub(crate) fn origin(key: Option<&ApiKey>) -> KeyOrigin {
        match key {
            None => KeyOrigin::None,
            Some(ApiKey {
                variable: Some(variable),
                ..
            }) => KeyOrigin::Variable(variable.clone()),
            Some(_) => KeyOrigin::Given,
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("value", &"<hidden>")
            .field("variable", &self.variable)
            .finish()
    }
}

impl From<&str> for ApiKey {
    fn from(value: &str) -> Self {
        Self::new(value)
    }
}

impl From<String> for ApiKey {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

/// Where the API key of a refused request came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyOrigin {
    /// No key was sent.
    None,
    /// The key was given directly: the manifest's `api_key`, or code.
    Given,
    /// The key was read from this environment variable.
    Variable(String),
}

/// What is wrong with an answer, in the words of the wire format's reader, and the cause
/// when a lower parser (JSON, UTF-8) failed.
#[derive(Debug)]
pub(crate) struct WireError {
    pub(crate) message: String,
    pub(crate) source: Option<BoxError>,
}

impl WireError {
    pub(crate) fn with_source(
        message: String,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            message,
            source: Some(Box::new(source)),
        }
    }
}

impl From<String> for WireError {
    fn from(message: String) -> Self {
        Self {
            message,
            source: None,
        }
    }
}

/// The start of `text`, to quote in a message.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_named_as_it_is_serialized() {
        for kind in [
            ProviderErrorKind::MissingApiKey,
            ProviderErrorKind::RetryAfter,
        ] {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, kind.as_str());
        }
        let error = ProviderError::Local {
            message: "gone".into(),
        };
        assert_eq!(error.kind(), ProviderErrorKind::Local);
    }

    fn unauthorized(status: u16, key: KeyOrigin) -> String {
        ProviderError::Unauthorized {
            server: "https://api.example.com/v1".into(),
            status,
            message: "invalid x-api-key".into(),
            key,
        }
        .to_string()
    }

    #[test]
    fn a_refused_key_names_where_it_came_from() {
        assert_eq!(
            unauthorized(401, KeyOrigin::Variable("ANTHROPIC_API_KEY".into())),
            "https://api.example.com/v1 answered 401: invalid x-api-key; check the API key in \
             the environment variable ANTHROPIC_API_KEY"
        );
        let given = unauthorized(403, KeyOrigin::Given);
        assert!(given.contains("403: invalid x-api-key"), "{given}");
        assert!(
            given.contains("`api_key` in the manifest's [model] section"),
            "{given}"
        );
        let none = unauthorized(401, KeyOrigin::None);
        assert!(none.contains("no API key was sent"), "{none}");
        assert!(none.contains("`api_key_env`"), "{none}");
    }

    #[test]
    fn a_timeout_names_the_setting_to_raise() {
        let error = ProviderError::Timeout {
            server: "http://127.0.0.1:8080/v1".into(),
            limit: Duration::from_secs(300),
            stalled: false,
        };
        assert_eq!(
            error.to_string(),
            "http://127.0.0.1:8080/v1 did not answer within 5m; if the model needs longer, \
             raise `timeout` in the manifest's [model] section (`HttpOptions::timeout` in code)"
        );
        let stalled = ProviderError::Timeout {
            server: "http://127.0.0.1:8080/v1".into(),
            limit: Duration::from_secs(120),
            stalled: true,
        };
        assert_eq!(
            stalled.to_string(),
            "http://127.0.0.1:8080/v1 sent nothing for 2m in the middle of a streamed answer; if \
             the model needs longer, raise `timeout` in the manifest's [model] section \
             (`HttpOptions::idle_timeout` in code)"
        );
    }

    #[test]
    fn an_api_key_is_never_printed() {
        let key = ApiKey::from_variable("OPENAI_API_KEY", "sk-secret");
        let shown = format!("{key:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("OPENAI_API_KEY"), "{shown}");
        assert_eq!(
            ApiKey::origin(Some(&key)),
            KeyOrigin::Variable("OPENAI_API_KEY".into())
        );
        assert_eq!(ApiKey::origin(Some(&"k".into())), KeyOrigin::Given);
        assert_eq!(ApiKey::origin(None), KeyOrigin::None);
    }
}
