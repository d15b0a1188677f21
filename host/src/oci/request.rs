//! One HTTP request of a pull to a registry, as a client span of OpenTelemetry's HTTP
//! conventions (`http.request.method`, `url.full`, `server.address`, `server.port`,
//! `http.response.status_code`, `error.type`), its trace context sent on in `traceparent`.
//!
//! oci-client has no hook around the requests it sends itself (the authentication probe and
//! token request, the uploads of a push), so those are spans of the operation instead
//! (`registry.rs`).

use std::future::Future;

use tracing::Instrument as _;
use tracing::field::Empty;

use crate::telemetry::context;

/// Sends `request` with `http` in a span of its own, a child of the current one, and hands
/// the answer to `read` inside that span (reading a body is part of the request). The span
/// records the status and, for a status of 400 or more or a failure to send, `error.type`.
pub(crate) async fn send<T, E, F>(
    http: &reqwest::Client,
    mut request: reqwest::Request,
    read: impl FnOnce(Result<reqwest::Response, reqwest::Error>) -> F,
) -> Result<T, E>
where
    F: Future<Output = Result<T, E>>,
{
    let span = span(&request);
    span.in_scope(|| context::inject_headers(request.headers_mut()));
    let exchange = async {
        let answer = http.execute(request).await;
        let span = tracing::Span::current();
        match &answer {
            Ok(response) => {
                let status = response.status();
                // As i64: the OpenTelemetry layer exports an unsigned number as text.
                span.record("http.response.status_code", i64::from(status.as_u16()));
                if status.is_client_error() || status.is_server_error() {
                    span.record("error.type", status.as_str());
                    span.record("otel.status_code", "ERROR");
                }
            }
            Err(error) => {
                span.record("error.type", error_type(error));
                span.record("otel.status_code", "ERROR");
            }
        }
        read(answer).await
    };
    exchange.instrument(span).await
}

/// The span of `request`: named by its method, as the conventions name a client span whose
/// URL has no template; its URL shown without what could be a credential ([`shown`]).
fn span(request: &reqwest::Request) -> tracing::Span {
    let method = request.method().as_str();
    let url = request.url();
    tracing::info_span!(
        "oci_request",
        otel.name = method,
        otel.kind = "client",
        otel.status_code = Empty,
        http.request.method = method,
        url.full = %shown(url),
        server.address = url.host_str(),
        server.port = url.port_or_known_default().map(i64::from),
        http.response.status_code = Empty,
        error.type = Empty,
    )
}

/// `url` as a span shows it: without user, password, query or fragment.
fn shown(url: &url::Url) -> url::Url {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown
}

/// What `error.type` says of a request that got no answer.
fn error_type(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "timeout"
    } else if error.is_connect() {
        "connect"
    } else if error.is_redirect() {
        "redirect"
    } else {
        "_OTHER"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_credentials_or_query() {
        let url = "https://user:secret@registry.example.com:5000/v2/tools/blobs/sha256:ab?sig=x#f";
        let url = url::Url::parse(url).unwrap();
        assert_eq!(
            shown(&url).as_str(),
            "https://registry.example.com:5000/v2/tools/blobs/sha256:ab"
        );
    }
}
