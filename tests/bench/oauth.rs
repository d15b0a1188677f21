//! What checking an access token costs a call: `host mcp --http` taking JWT access tokens
//! (`[mcp.auth]`, ES256, the issuer's key set fetched once and cached) against the same server
//! with no auth, side by side in one process, in interleaved rounds; each call a `tools/call`
//! of the calculator's `add` on a kept-alive connection, with a session. The issuer is a
//! local one (tests/support/issuer.rs).

use std::sync::Arc;

use toolhost::mcp::server::auth::ResourceServerConfig;
use toolhost::mcp::server::{HttpServerOptions, McpServer, serve_http};
use toolhost::{ComponentConfig, Host, Runtime, RuntimeConfig};
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::issuer::{RESOURCE, SigningKey, TestIssuer};
use toolhost_tests::mcp::HttpClient;

use super::over_http::call_add;
use super::{Bench, Stats, fmt, ratio};

/// Prints the section, and adds `jwt_over_none` to the summary.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    let calls = bench.iterations;
    let summary = &mut bench.summary;
    let key = SigningKey::new("bench");
    let issuer = TestIssuer::start(&[&key]).await;
    let token = key.sign(&issuer.claims(|_| {}));
    let cache = tempfile::tempdir()?;
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..RuntimeConfig::default()
    })?;
    let host = Arc::new(
        Host::builder()
            .runtime(runtime)
            .component(ComponentConfig::new(CALCULATOR))
            .build()
            .await?,
    );
    let mut auth = ResourceServerConfig::new(issuer.url().parse()?, RESOURCE.parse()?);
    auth.scopes = vec!["mcp:tools".to_owned()];
    let plain = serve(&host, HttpServerOptions::default()).await?;
    let protected = serve(
        &host,
        HttpServerOptions {
            auth: Some(auth),
            ..HttpServerOptions::default()
        },
    )
    .await?;
    let mut none = HttpClient::new(&plain);
    none.initialize().await;
    let mut jwt = HttpClient::new(&protected);
    jwt.headers
        .push(("authorization".into(), format!("Bearer {token}")));
    jwt.initialize().await;

    let rounds = 20;
    let per_round = (calls / rounds).max(10);
    let (mut with_none, mut with_jwt) = (Vec::new(), Vec::new());
    for round in 0..=rounds {
        for _ in 0..per_round {
            let (a, b) = (call_add(&mut none).await?, call_add(&mut jwt).await?);
            if round > 0 {
                with_none.push(a);
                with_jwt.push(b);
            }
        }
    }
    let (none_stats, jwt_stats) = (Stats::of(with_none), Stats::of(with_jwt));
    println!();
    println!("MCP over HTTP: a call with a validated JWT (cached keys) against no auth");
    println!("{:<44} {:>12} {:>12}", "", "median", "p90");
    none_stats.row("  no auth");
    jwt_stats.row("  JWT access token (ES256) checked");
    let over = ratio(jwt_stats.median, none_stats.median);
    println!("JWT / no auth:                {over:>8.2}x");
    println!(
        "token check per call:         {:>8}",
        fmt(jwt_stats.median.saturating_sub(none_stats.median))
    );
    summary.add("jwt_over_none", format!("{over:.2}"));
    Ok(())
}

/// Serves `host` on a free loopback port with `options`; its `/mcp` URL.
async fn serve(host: &Arc<Host>, options: HttpServerOptions) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(serve_http(
        McpServer::new(host.clone()),
        listener,
        options,
        std::future::pending(),
    ));
    Ok(url)
}
