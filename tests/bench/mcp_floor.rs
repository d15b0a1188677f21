//! The floor of the MCP benchmark: the least an MCP server can do per request. It reads each
//! JSON-RPC message and answers a request at once with a fixed result: a `tools/call` gets
//! what `host mcp` answers for `add` of 1 and 2, `{"result": 3.0}` structured and as text. On
//! stdio, or with `--http ADDR` over HTTP (`application/json` answers; it prints `listening
//! on ADDR` on stderr).

use std::convert::Infallible;
use std::io::{BufRead as _, Write as _};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

fn main() {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => stdio(),
        (Some("--http"), Some(address)) => http(&address),
        _ => {
            eprintln!("usage: bench-mcp-floor [--http ADDR]");
            std::process::exit(2);
        }
    }
}

/// The answer to `message`, if it is a request.
fn answer(message: &Value) -> Option<Value> {
    let id = message.get("id")?;
    let result = match message.get("method").and_then(Value::as_str) {
        Some("initialize") => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "floor", "version": "0" },
        }),
        Some("tools/list") => json!({ "tools": [] }),
        Some("tools/call") => json!({
            "content": [{ "type": "text", "text": "{\"result\":3.0}" }],
            "isError": false,
            "structuredContent": { "result": 3.0 },
        }),
        _ => json!({}),
    };
    Some(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

fn stdio() {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let Some(answer) = answer(&message) {
            let mut text = answer.to_string();
            text.push('\n');
            if stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return;
            }
        }
    }
}

fn http(address: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .expect("the address is free");
        eprintln!("listening on {}", listener.local_addr().expect("bound"));
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let service = hyper::service::service_fn(serve);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

async fn serve(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = request
        .into_body()
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    let answer = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|message| answer(&message));
    let mut response = match answer {
        Some(answer) => Response::new(Full::new(Bytes::from(answer.to_string()))),
        None => {
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = hyper::StatusCode::ACCEPTED;
            response
        }
    };
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}
