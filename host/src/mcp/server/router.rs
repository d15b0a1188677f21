//! The HTTP front of `/mcp`: the routes, the bearer token, the body limit, JSON-RPC errors
//! for bodies that are not JSON, and the answers watched on their way out.

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio_util::task::TaskTracker;

use super::McpServer;
use super::disconnect::WatchedBody;
use super::options::HttpOptions;
use super::service::{Mcp, ResponseBody};

pub(super) struct Router {
    mcp: Mcp,
    server: McpServer,
    token: Option<String>,
    max_body: usize,
    cancel_on_disconnect: bool,
    /// The answers to JSON-RPC requests being sent, for a shutdown to wait for.
    pub(super) answers: TaskTracker,
}

impl Router {
    pub(super) fn new(mcp: Mcp, server: McpServer, options: &HttpOptions) -> Self {
        Self {
            mcp,
            server,
            token: options.token.clone(),
            max_body: options.max_body,
            cancel_on_disconnect: !options.stateless,
            answers: TaskTracker::new(),
        }
    }

    pub(super) async fn route(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        match request.uri().path() {
            "/mcp" => {}
            "/health" => return self.health(request.method()),
            _ => {
                return text(
                    StatusCode::NOT_FOUND,
                    "not found: the MCP endpoint is /mcp (and GET /health)",
                );
            }
        }
        if let Some(token) = &self.token
            && !authorized(request.headers(), token)
        {
            let mut response = text(
                StatusCode::UNAUTHORIZED,
                "unauthorized: send the server's token as `Authorization: Bearer <token>`",
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
        if request.method() != Method::POST {
            return self.mcp.handle(request).await;
        }
        self.post(request).await
    }

    /// A POST to `/mcp`: its body read whole (up to the limit) and parsed, then handed to
    /// rmcp, and the answer watched on its way out.
    async fn post(&self, request: Request<Incoming>) -> Response<ResponseBody> {
        let (parts, body) = request.into_parts();
        let bytes = match self.read_body(body).await {
            Ok(bytes) => bytes,
            Err(response) => return response,
        };
        let message: Value = match serde_json::from_slice(&bytes) {
            Ok(message) => message,
            Err(error) => {
                return jsonrpc_error(
                    StatusCode::BAD_REQUEST,
                    -32700,
                    format!("Parse error: {error}"),
                );
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        let request_id = message.get("id").filter(|_| method.is_some()).cloned();
        if request_id.is_some() && self.server.is_draining() {
            return jsonrpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                -32603,
                "the server is shutting down and takes no new requests".to_owned(),
            );
        }
        let guard = (self.cancel_on_disconnect
            && method == Some("tools/call")
            && parts.headers.contains_key("mcp-session-id"))
        .then(|| parts.headers.clone());
        let sending = request_id.as_ref().map(|_| self.answers.token());
        let response = self
            .mcp
            .handle(Request::from_parts(parts, Full::new(bytes)))
            .await;
        let Some(sending) = sending else {
            return response;
        };
        let (parts, body) = response.into_parts();
        let mut body = WatchedBody::new(body, sending);
        if let (Some(headers), Some(id)) = (guard, request_id)
            && parts.status == StatusCode::OK
        {
            body = body.cancel_on_drop(self.mcp.clone(), id, headers);
        }
        Response::from_parts(parts, body.boxed())
    }

    /// The whole body, or the answer to give when it cannot be read.
    async fn read_body(&self, body: Incoming) -> Result<Bytes, Response<ResponseBody>> {
        match Limited::new(body, self.max_body).collect().await {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(error) if error.is::<LengthLimitError>() => {
                let mut response = jsonrpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    -32600,
                    format!("the request body is larger than {} bytes", self.max_body),
                );
                // The rest of the body is not read, so this connection cannot carry another
                // request: say so, or a client may send its next one into the closing socket.
                response
                    .headers_mut()
                    .insert(header::CONNECTION, http::HeaderValue::from_static("close"));
                Err(response)
            }
            Err(error) => Err(text(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the request body: {error}"),
            )),
        }
    }

    /// `GET /health`: 200 with the number of tools while serving, 503 while shutting down.
    fn health(&self, method: &Method) -> Response<ResponseBody> {
        if method != Method::GET && method != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "use GET /health");
        }
        let (status, body) = if self.server.is_draining() {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({ "status": "shutting_down" }),
            )
        } else {
            (
                StatusCode::OK,
                json!({ "status": "ok", "tools": self.server.tool_count() }),
            )
        };
        json_response(status, &body)
    }
}

/// Whether the request carries `Authorization: Bearer <token>`. The comparison takes the
/// same time wherever the first difference is.
fn authorized(headers: &http::HeaderMap, token: &str) -> bool {
    let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some((scheme, given)) = value.split_once(' ') else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return false;
    }
    let (given, token) = (given.trim().as_bytes(), token.as_bytes());
    given.len() == token.len()
        && given
            .iter()
            .zip(token)
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

fn text(status: StatusCode, body: &str) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn json_response(status: StatusCode, body: &Value) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// A JSON-RPC error answer to a request whose id cannot be known.
fn jsonrpc_error(status: StatusCode, code: i32, message: String) -> Response<ResponseBody> {
    json_response(
        status,
        &json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_is_authorized() {
        let with = |value: &str| {
            let mut headers = http::HeaderMap::new();
            headers.insert(
                header::AUTHORIZATION,
                http::HeaderValue::from_str(value).expect("a valid header"),
            );
            headers
        };
        assert!(authorized(&with("Bearer s3cret"), "s3cret"));
        assert!(authorized(&with("bearer s3cret"), "s3cret"));
        assert!(!authorized(&with("Bearer s3cre"), "s3cret"));
        assert!(!authorized(&with("Bearer s3cretx"), "s3cret"));
        assert!(!authorized(&with("Basic s3cret"), "s3cret"));
        assert!(!authorized(&http::HeaderMap::new(), "s3cret"));
    }
}
