//! `/metrics` and `/status`: the figures for Prometheus, and the page that draws them for a
//! person, behind the checks of `/mcp`.

use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;

use super::{Router, text};
use crate::mcp::server::service::ResponseBody;
use crate::telemetry::MetricsPage;
use crate::telemetry::metrics::metrics;

impl Router {
    /// `GET /metrics`: the metrics in Prometheus's text format, behind the same checks as
    /// `/mcp` (`Host`, `Origin`, and the token or access token when one is required).
    pub(super) async fn metrics(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        let page = match self.observed(request, "/metrics").await {
            Ok(page) => page,
            Err(refused) => return refused,
        };
        let sessions = self.mcp.sessions().await;
        metrics().sessions.record(sessions as u64, &[]);
        match page.render() {
            Ok(body) => {
                let mut response = text(StatusCode::OK, &body);
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                );
                response
            }
            Err(error) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("cannot render the metrics: {error}"),
            ),
        }
    }

    /// `GET /status`: a page that draws `/metrics` as charts. The page holds no figures, so
    /// it is served behind the `Host` and `Origin` checks of `/mcp` but without the token: a
    /// browser that opens it cannot send one. When the server requires a token (a static one
    /// or access tokens), the page asks the person for it, keeps it in the tab's
    /// `sessionStorage` and sends it to `/metrics` as `Authorization: Bearer`, never in a URL.
    pub(super) async fn status(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        if let Err(refused) = self.checked_for_figures(&request, "/status").await {
            return refused;
        }
        let needs_token = self.token.is_some() || self.resource_server.is_some();
        let page = STATUS_PAGE.replace(TOKEN_MARK, if needs_token { "required" } else { "none" });
        let mut response = text(StatusCode::OK, &page);
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/html; charset=utf-8"),
        );
        // Its own script and styles, requests to this server only, and no form sent
        // anywhere (the token is read by the script, never submitted in a URL).
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            http::HeaderValue::from_static(
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                 connect-src 'self'; form-action 'none'",
            ),
        );
        response
    }

    /// The metrics page of a `GET` or `HEAD` of `path` that passed the checks of `/mcp`
    /// (`Host`, `Origin`, the token or access token), or the answer to give instead.
    async fn observed(
        &self,
        request: Request<Incoming>,
        path: &str,
    ) -> Result<&MetricsPage, Response<ResponseBody>> {
        let page = self.checked_for_figures(&request, path).await?;
        self.authenticate(request).await?;
        Ok(page)
    }

    /// The metrics page, for a `GET` or `HEAD` of `path` with an allowed `Host` and `Origin`
    /// (the token is not checked here), or the answer to give instead.
    async fn checked_for_figures<B>(
        &self,
        request: &Request<B>,
        path: &str,
    ) -> Result<&MetricsPage, Response<ResponseBody>> {
        let method = request.method();
        if method != Method::GET && method != Method::HEAD {
            return Err(text(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("use GET {path}"),
            ));
        }
        if let Some(refused) = self.mcp.refuses(request.headers()).await {
            return Err(refused);
        }
        self.metrics.as_ref().ok_or_else(|| {
            text(
                StatusCode::NOT_FOUND,
                "not found: this server exports no metrics (the application installed no \
                 Prometheus exporter)",
            )
        })
    }
}

/// The status page: HTML with its script and styles, no external assets.
const STATUS_PAGE: &str = include_str!("../status.html");

/// What the page's `data-token` holds in `status.html`, replaced by `required` or `none`.
const TOKEN_MARK: &str = "TOKEN_NEEDED";
