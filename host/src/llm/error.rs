//! What can go wrong talking to a model.

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

    /// No answer came in time.
    #[error("{server} did not answer within {}", humantime::format_duration(*limit))]
    Timeout {
        /// The server.
        server: String,
        /// The limit.
        limit: Duration,
    },

    /// The server could not be reached, or the connection broke.
    #[error("cannot reach {server}: {message}")]
    Connection {
        /// The server.
        server: String,
        /// What happened.
        message: String,
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

impl ProviderError {
    /// A short, stable name for the kind of error.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::MissingApiKey { .. } => "missing_api_key",
            Self::ToolsNotSupported { .. } => "tools_not_supported",
            Self::Status { .. } => "status",
            Self::Timeout { .. } => "timeout",
            Self::Connection { .. } => "connection",
            Self::Protocol { .. } => "protocol",
            Self::Local { .. } => "local",
        }
    }
}
