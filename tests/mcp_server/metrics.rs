//! `/metrics` of `host mcp --http`, scraped by a real Prometheus (Debian's `prometheus`,
//! installed by `scripts/setup-services.sh`) that the test starts on 127.0.0.1: what
//! Prometheus's HTTP API answers to PromQL is checked against the calls the test made.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::{Child, Command};
use toolhost_tests::mcp::{HANG, HttpServer};

use super::test_manifest;

/// The bucket bounds of `mcp.server.operation.duration` (the MCP conventions'), in seconds.
const MCP_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

#[tokio::test]
async fn prometheus_scrapes_the_calls_their_outcomes_and_their_latency() {
    let manifest = test_manifest();
    let server = HttpServer::start(&[manifest.arg(), "--max-request", "2KiB"], &[]).await;
    server.loaded().await;
    let mut client = server.client().await;
    // A request past --max-request: refused, and counted as such.
    let padding = "x".repeat(4096);
    let big = json!({ "jsonrpc": "2.0", "id": 99, "method": "ping", "params": { "_meta": { "pad": padding } } });
    let refused = client.post(&big).send().await.unwrap();
    assert_eq!(refused.status(), 413);
    let mut slowest = Duration::ZERO;
    for x in [2, 3, 5, 7, 11] {
        let started = Instant::now();
        let answer = client.call("square_root", json!({ "x": x })).await;
        slowest = slowest.max(started.elapsed());
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let answer = client.call("hog", json!({})).await;
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        text.contains("out of memory"),
        "hog ran out of memory: {answer}"
    );
    // A name no tool has: counted under one label, whatever the caller makes up.
    for made_up in ["no_such_tool_1", "no_such_tool_2"] {
        client.call(made_up, json!({})).await;
    }

    let prometheus = Prometheus::start(&server.authority).await;
    let ok = prometheus
        .value(r#"sum(toolhost_tool_calls_total{gen_ai_tool_name="square_root",toolhost_outcome="ok"})"#)
        .await;
    assert_eq!(ok, 5.0, "five square roots");
    let memory = prometheus
        .value(r#"sum(toolhost_tool_calls_total{gen_ai_tool_name="hog",toolhost_outcome="memory_limit"})"#)
        .await;
    assert_eq!(memory, 1.0, "one call out of memory");
    let too_large = prometheus
        .value(r#"sum(toolhost_http_refusals_total{toolhost_refusal_reason="too_large"})"#)
        .await;
    assert_eq!(too_large, 1.0, "one request too large");
    let unknown = prometheus
        .value(r#"sum(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="_unknown"})"#)
        .await;
    assert_eq!(unknown, 2.0, "the made-up names, under one label");
    let made_up = prometheus
        .series(r#"{gen_ai_tool_name=~"no_such_tool.*"}"#)
        .await;
    assert!(
        made_up.is_empty(),
        "no series names a made-up tool: {made_up:?}"
    );

    // The median of the square roots' durations, as the server measured them: within the
    // bucket that holds the slowest one the client saw (a server's time is inside the
    // client's, and Prometheus interpolates within a bucket).
    let median = prometheus
        .value(
            r#"histogram_quantile(0.5, sum by (le) (mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",gen_ai_tool_name="square_root"}))"#,
        )
        .await;
    let bound = MCP_BUCKETS
        .into_iter()
        .find(|bound| *bound >= slowest.as_secs_f64())
        .unwrap_or(f64::INFINITY);
    assert!(
        median > 0.0 && median <= bound,
        "median {median} s, the slowest call took {slowest:?} (bucket bound {bound} s)"
    );
}

#[tokio::test]
async fn metrics_are_behind_the_same_token_and_host_checks_as_mcp() {
    let manifest = test_manifest();
    let server = HttpServer::start(
        &[manifest.arg(), "--token-env", "METRICS_TOKEN"],
        &[("METRICS_TOKEN", "s3cret")],
    )
    .await;
    server.loaded().await;
    let url = format!("http://{}/metrics", server.authority);
    let http = toolhost_tests::http_client().no_proxy().build().unwrap();
    let without = http.get(&url).send().await.unwrap();
    assert_eq!(without.status(), 401);
    let foreign = http
        .get(&url)
        .bearer_auth("s3cret")
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let with = http.get(&url).bearer_auth("s3cret").send().await.unwrap();
    assert_eq!(with.status(), 200);
    let text = with.text().await.unwrap();
    assert!(
        text.contains("# TYPE toolhost_mcp_sessions gauge"),
        "the page is Prometheus text: {text}"
    );
}

/// A Prometheus server scraping one target every second, with its own configuration and data
/// in a temporary directory; killed when dropped.
struct Prometheus {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts Prometheus scraping `http://TARGET/metrics` and waits until it is ready.
    async fn start(target: &str) -> Self {
        let binary = prometheus_binary();
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: toolhost\n    metrics_path: /metrics\n    \
                 static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let address = free_address();
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={address}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("prometheus starts");
        let prometheus = Self {
            child,
            url: format!("http://{address}"),
            _dir: dir,
        };
        prometheus.ready().await;
        prometheus
    }

    async fn ready(&self) {
        let http = toolhost_tests::http_client().no_proxy().build().unwrap();
        let ready = tokio::time::timeout(HANG, async {
            loop {
                let answer = http.get(format!("{}/-/ready", self.url)).send().await;
                if answer.is_ok_and(|answer| answer.status().is_success()) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await;
        assert!(ready.is_ok(), "prometheus never became ready");
    }

    /// The API's answer to `path` with `query`, once it has a result: right after it is
    /// ready, Prometheus has scraped nothing yet and answers every query with no data.
    async fn poll(&self, path: &str, query: &str) -> Vec<Value> {
        let http = toolhost_tests::http_client().no_proxy().build().unwrap();
        let found = tokio::time::timeout(HANG, async {
            loop {
                let answer: Value = http
                    .get(format!("{}{path}", self.url))
                    .query(&[(
                        if path.ends_with("series") {
                            "match[]"
                        } else {
                            "query"
                        },
                        query,
                    )])
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                assert_eq!(answer["status"], "success", "{query}: {answer}");
                let data = &answer["data"];
                let results = data["result"].as_array().or(data.as_array());
                if let Some(results) = results.filter(|r| !r.is_empty()) {
                    return results.clone();
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
        .await;
        found.unwrap_or_default()
    }

    /// The value of instant query `query` (one sample), waiting until it has one and it is
    /// not NaN.
    async fn value(&self, query: &str) -> f64 {
        let deadline = Instant::now() + HANG;
        loop {
            let results = self.poll("/api/v1/query", query).await;
            let value = results
                .first()
                .and_then(|sample| sample["value"][1].as_str())
                .map(|value| value.parse::<f64>().unwrap());
            match value {
                Some(value) if !value.is_nan() => return value,
                _ if Instant::now() > deadline => panic!("{query}: no value in {results:?}"),
                _ => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    }

    /// The series matching `selector` (checked once some series of the target exist).
    async fn series(&self, selector: &str) -> Vec<Value> {
        self.poll("/api/v1/series", r#"{job="toolhost"}"#).await;
        let http = toolhost_tests::http_client().no_proxy().build().unwrap();
        let answer: Value = http
            .get(format!("{}/api/v1/series", self.url))
            .query(&[("match[]", selector)])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        answer["data"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// The `prometheus` binary; fails the test, naming the set-up script, when there is none.
fn prometheus_binary() -> PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("prometheus"))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "this test needs Prometheus and `prometheus` is not on PATH: run \
                 scripts/setup-services.sh (just test does)"
            )
        })
}

/// A free address on 127.0.0.1 (its port taken and let go).
fn free_address() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}
