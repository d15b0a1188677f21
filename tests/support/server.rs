//! A real HTTP/1.1 server on 127.0.0.1 whose answers a test scripts, and which records every
//! request it gets.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Recorded {
    /// The value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// What the server answers.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Headers to send.
    pub headers: Vec<(String, String)>,
    /// The body, and how to send it.
    pub body: ReplyBody,
}

/// How a reply's body is sent.
#[derive(Debug, Clone)]
pub enum ReplyBody {
    /// All at once, with a content length.
    Full(Vec<u8>),
    /// Chunk by chunk (chunked transfer encoding), each flushed, with `pause` between them.
    Chunks {
        /// The chunks, in order.
        chunks: Vec<Vec<u8>>,
        /// The pause before each chunk after the first.
        pause: Duration,
        /// Whether to cut the connection after the last chunk instead of ending the body.
        cut: bool,
    },
}

impl Reply {
    /// A JSON reply with status `status`.
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: ReplyBody::Full(value.to_string().into_bytes()),
        }
    }

    /// A plain-text reply.
    pub fn text(status: u16, text: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: ReplyBody::Full(text.as_bytes().to_vec()),
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

type Handler = dyn Fn(&Recorded) -> Reply + Send + Sync;

/// A running server. It stops when dropped.
pub struct TestServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Starts a server on a free port of 127.0.0.1 that answers every request with
    /// `handler`.
    pub async fn start(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let addr = listener.local_addr().expect("a bound address");
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let handler: Arc<Handler> = Arc::new(handler);
        let task = tokio::spawn({
            let requests = requests.clone();
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let requests = requests.clone();
                    let handler = handler.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |request: Request<Incoming>| {
                            let requests = requests.clone();
                            let handler = handler.clone();
                            async move {
                                Ok::<_, Infallible>(respond(request, &requests, &*handler).await)
                            }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        });
        Self {
            addr,
            requests,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `127.0.0.1:PORT`.
    pub fn authority(&self) -> String {
        self.addr.to_string()
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("not poisoned").clone()
    }
}

async fn respond(
    request: Request<Incoming>,
    requests: &Mutex<Vec<Recorded>>,
    handler: &Handler,
) -> Response<BoxBody<Bytes, std::io::Error>> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let recorded = Recorded {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.to_string()),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect(),
        body,
    };
    requests
        .lock()
        .expect("not poisoned")
        .push(recorded.clone());
    let reply = handler(&recorded);

    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    let body = match reply.body {
        ReplyBody::Full(bytes) => Full::new(Bytes::from(bytes))
            .map_err(|never| match never {})
            .boxed(),
        ReplyBody::Chunks { chunks, pause, cut } => {
            let (sender, receiver) = mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(1);
            tokio::spawn(async move {
                for (i, chunk) in chunks.into_iter().enumerate() {
                    if i > 0 && !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                    if sender
                        .send(Ok(Frame::data(Bytes::from(chunk))))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                if cut {
                    let error = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "cut");
                    let _ = sender.send(Err(error)).await;
                }
            });
            let mut receiver = receiver;
            StreamBody::new(futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))).boxed()
        }
    };
    response.body(body).expect("a valid response")
}
