//! Outgoing HTTP requests through `wasi:http`.
//!
//! The host lets a request through only when the tool was granted its host (`--allow-http
//! example.com`, or `http = ["example.com"]` in the manifest); any other request fails with
//! [`Error::Denied`].
//!
//! ```no_run
//! # fn main() -> Result<(), toolhost_sdk::http::Error> {
//! let response = toolhost_sdk::http::get("https://wttr.in/Paris?format=j1")?;
//! let weather: serde_json::Value = response.error_for_status()?.json()?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::time::Duration;

use serde::{Serialize, de::DeserializeOwned};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme,
};
use wasip2::io::streams::StreamError;

/// The largest body a [`Response`] reads, so a misbehaving server cannot exhaust the tool's
/// memory.
pub const MAX_BODY: usize = 16 * 1024 * 1024;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The URL could not be used; the message says why.
    InvalidUrl(String),
    /// The host refused the request: this tool was not granted the URL's host.
    Denied(String),
    /// The request could not be completed (connection refused, timeout, ...).
    Request(String),
    /// The server answered with an error status.
    Status {
        /// The HTTP status code.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// The response body could not be read or decoded.
    Body(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidUrl(message) => write!(f, "invalid URL: {message}"),
            Self::Denied(host) => write!(
                f,
                "the request to {host} was denied: this tool has no HTTP grant for that host"
            ),
            Self::Request(message) => write!(f, "the request failed: {message}"),
            Self::Status { status, body } => write!(f, "the server answered {status}: {body}"),
            Self::Body(message) => write!(f, "the response body could not be read: {message}"),
        }
    }
}

impl std::error::Error for Error {}

/// An HTTP response, read whole.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers, as sent.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (case-insensitive), if it is valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// The body as UTF-8 text.
    pub fn text(&self) -> Result<&str, Error> {
        std::str::from_utf8(&self.body).map_err(|e| Error::Body(e.to_string()))
    }

    /// The body parsed as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(&self.body).map_err(|e| Error::Body(e.to_string()))
    }

    /// This response, or [`Error::Status`] when the status is not 2xx.
    pub fn error_for_status(self) -> Result<Self, Error> {
        if (200..300).contains(&self.status) {
            return Ok(self);
        }
        let body = String::from_utf8_lossy(&self.body);
        let body: String = body.chars().take(200).collect();
        Err(Error::Status {
            status: self.status,
            body,
        })
    }
}

/// Sends a GET request to `url`.
pub fn get(url: &str) -> Result<Response, Error> {
    Request::get(url).send()
}

/// A request being built.
#[derive(Debug, Clone)]
pub struct Request {
    method: Method,
    url: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Option<Vec<u8>>,
    timeout: Option<Duration>,
}

impl Request {
    /// A GET request to `url`.
    pub fn get(url: &str) -> Self {
        Self::new(Method::Get, url)
    }

    /// A POST request to `url`.
    pub fn post(url: &str) -> Self {
        Self::new(Method::Post, url)
    }

    fn new(method: Method, url: &str) -> Self {
        Self {
            method,
            url: url.to_owned(),
            headers: Vec::new(),
            body: None,
            timeout: None,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .push((name.to_owned(), value.as_bytes().to_vec()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// Sets a JSON body and its content type.
    pub fn json<T: Serialize>(self, value: &T) -> Result<Self, Error> {
        let body = serde_json::to_vec(value).map_err(|e| Error::Body(e.to_string()))?;
        Ok(self.header("content-type", "application/json").body(body))
    }

    /// Gives up when connecting or waiting for the first byte takes longer than `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sends the request and reads the whole response (at most [`MAX_BODY`] bytes).
    pub fn send(self) -> Result<Response, Error> {
        let target = Target::parse(&self.url)?;
        let fields = Fields::from_list(&self.headers)
            .map_err(|e| Error::InvalidUrl(format!("bad header: {e:?}")))?;
        let request = OutgoingRequest::new(fields);
        let refused = |what: &str| Error::InvalidUrl(format!("the host refused the {what}"));
        request
            .set_method(&self.method)
            .map_err(|()| refused("method"))?;
        request
            .set_scheme(Some(&target.scheme))
            .map_err(|()| refused("scheme"))?;
        request
            .set_authority(Some(&target.authority))
            .map_err(|()| refused("authority"))?;
        request
            .set_path_with_query(Some(&target.path))
            .map_err(|()| refused("path"))?;

        let outgoing = request
            .body()
            .map_err(|()| Error::Request("no request body".into()))?;
        let options = self.timeout.map(|timeout| {
            let options = RequestOptions::new();
            let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
            // A host that does not support a timeout keeps its own; nothing to do about it.
            let _ = options.set_connect_timeout(Some(nanos));
            let _ = options.set_first_byte_timeout(Some(nanos));
            options
        });
        let pending = outgoing_handler::handle(request, options)
            .map_err(|code| request_error(&target.authority, code))?;
        if let Some(body) = &self.body {
            write_body(&outgoing, body)?;
        }
        OutgoingBody::finish(outgoing, None)
            .map_err(|code| request_error(&target.authority, code))?;

        pending.subscribe().block();
        let response = match pending.get() {
            Some(Ok(Ok(response))) => response,
            Some(Ok(Err(code))) => return Err(request_error(&target.authority, code)),
            Some(Err(())) | None => {
                return Err(Error::Request("the response was already taken".into()));
            }
        };
        let status = response.status();
        let headers = response.headers().entries();
        let body = response
            .consume()
            .map_err(|()| Error::Body("the body was already taken".into()))?;
        let bytes = read_body(&body)?;
        drop(IncomingBody::finish(body));
        Ok(Response {
            status,
            headers,
            body: bytes,
        })
    }
}

struct Target {
    scheme: Scheme,
    authority: String,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Self, Error> {
        let (scheme, rest) = url.split_once("://").ok_or_else(|| {
            Error::InvalidUrl(format!("`{url}` has no scheme (http:// or https://)"))
        })?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => return Err(Error::InvalidUrl(format!("unsupported scheme `{other}`"))),
        };
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(split);
        if authority.is_empty() {
            return Err(Error::InvalidUrl(format!("`{url}` has no host")));
        }
        let path = match path {
            "" => "/".to_owned(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_owned(),
        };
        Ok(Self {
            scheme,
            authority: authority.to_owned(),
            path,
        })
    }
}

fn request_error(authority: &str, code: ErrorCode) -> Error {
    match code {
        ErrorCode::HttpRequestDenied => Error::Denied(authority.to_owned()),
        other => Error::Request(format!("{other:?}")),
    }
}

fn write_body(body: &OutgoingBody, bytes: &[u8]) -> Result<(), Error> {
    let stream = body
        .write()
        .map_err(|()| Error::Request("the request body stream was already taken".into()))?;
    // `blocking-write-and-flush` takes at most 4096 bytes at a time.
    for chunk in bytes.chunks(4096) {
        stream
            .blocking_write_and_flush(chunk)
            .map_err(|e| Error::Request(format!("writing the body: {e:?}")))?;
    }
    Ok(())
}

fn read_body(body: &IncomingBody) -> Result<Vec<u8>, Error> {
    let stream = body
        .stream()
        .map_err(|()| Error::Body("the body stream was already taken".into()))?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                if bytes.len() + chunk.len() > MAX_BODY {
                    return Err(Error::Body(format!(
                        "the body is larger than {MAX_BODY} bytes"
                    )));
                }
                bytes.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => return Ok(bytes),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(Error::Body(e.to_debug_string()));
            }
        }
    }
}
