//! Reading a JSON document from the authorization server: within a time limit and a size
//! limit, so that a slow, down or garbage-answering endpoint costs a bounded wait and an error
//! that names it, never a hang or a huge allocation.

use std::time::Duration;

use serde::de::DeserializeOwned;

/// The largest document read from the authorization server (metadata, a key set, an
/// introspection answer).
pub(super) const MAX_DOCUMENT: usize = 256 << 10;

/// What went wrong reading a document; the URL is named by the caller.
#[derive(Debug, thiserror::Error)]
pub(super) enum FetchError {
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    #[error("cannot reach it")]
    Unreachable(#[source] reqwest13::Error),
    #[error("it answered HTTP {0}")]
    Status(u16),
    #[error("its answer is larger than {MAX_DOCUMENT} bytes")]
    TooLarge,
    #[error("its answer is not the JSON expected")]
    NotJson(#[source] serde_json::Error),
}

/// The HTTP client for the authorization server: no redirects followed (a document moved
/// elsewhere is an error to fix, not a place to trust), `timeout` for the whole exchange.
pub(super) fn client(timeout: Duration) -> Result<reqwest13::Client, reqwest13::Error> {
    reqwest13::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest13::redirect::Policy::none())
        .build()
}

/// Sends `request` and reads its answer as `T`, within `timeout` and [`MAX_DOCUMENT`].
pub(super) async fn json<T: DeserializeOwned>(
    request: reqwest13::RequestBuilder,
    timeout: Duration,
) -> Result<T, FetchError> {
    let read = async {
        let mut response = request
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(FetchError::Unreachable)?;
        if !response.status().is_success() {
            return Err(FetchError::Status(response.status().as_u16()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(FetchError::Unreachable)? {
            if body.len() + chunk.len() > MAX_DOCUMENT {
                return Err(FetchError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(FetchError::NotJson)
    };
    tokio::time::timeout(timeout, read)
        .await
        .map_err(|_| FetchError::TimedOut(timeout))?
}
