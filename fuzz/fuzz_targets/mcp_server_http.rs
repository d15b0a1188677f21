//! What an MCP client POSTs to `host mcp --http` at `/mcp` (stateless): any body. The
//! server must answer each request, and not take long.
#![no_main]

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use toolhost::mcp::server::{HttpServerOptions, McpServer, serve_http};
use toolhost_fuzz::host;

/// A server on loopback, running on a thread of its own for the whole process.
fn server() -> SocketAddr {
    static ADDRESS: OnceLock<SocketAddr> = OnceLock::new();
    *ADDRESS.get_or_init(|| {
        let host = host();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("a loopback port");
                tx.send(listener.local_addr().expect("its address"))
                    .expect("the address handed over");
                let options = HttpServerOptions {
                    stateless: true,
                    max_body: 64 * 1024,
                    ..HttpServerOptions::default()
                };
                serve_http(
                    McpServer::new(host),
                    listener,
                    options,
                    std::future::pending(),
                )
                .await
                .expect("the server runs");
            });
        });
        rx.recv().expect("the server's address")
    })
}

fuzz_target!(|body: &[u8]| {
    let address = server();
    let mut stream = TcpStream::connect(address).expect("a connection to the server");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-11-25\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(&[head.as_bytes(), body].concat())
        .expect("the request sent");
    let mut answer = Vec::new();
    if let Err(error) = stream.read_to_end(&mut answer) {
        panic!(
            "no whole answer within 10 s ({error}) to {}; got {}",
            String::from_utf8_lossy(body),
            String::from_utf8_lossy(&answer)
        );
    }
    assert!(
        answer.starts_with(b"HTTP/1.1 "),
        "not an HTTP answer to {}: {}",
        String::from_utf8_lossy(body),
        String::from_utf8_lossy(&answer)
    );
});
