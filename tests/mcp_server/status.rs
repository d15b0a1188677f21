//! `/status` of `host mcp --http`, loaded in headless Chromium (Debian's `chromium`, installed
//! by `scripts/setup-services.sh`): the page renders, each chart has data, the console has no
//! error; a screenshot is kept under the target directory
//! (`$CARGO_TARGET_TMPDIR/status.png`, `status-token.png`). On a server that requires a token,
//! Chromium is driven over the DevTools protocol (`tests/mcp-peers/status_browser.mjs`, on the
//! peers' Node 24) as a person uses the page: it asks for the token, a wrong one is refused,
//! the right one is typed in.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::process::Command;
use toolhost_tests::mcp::{HANG, HttpClient, HttpServer, peers};

use super::test_manifest;

#[tokio::test]
async fn the_status_page_draws_the_live_figures_in_a_browser() {
    let manifest = test_manifest();
    let server = HttpServer::start(&[manifest.arg()], &[]).await;
    server.loaded().await;
    let mut client = server.client().await;
    for x in [2, 3, 5] {
        client.call("square_root", json!({ "x": x })).await;
    }
    client.call("hog", json!({})).await;
    let url = format!("http://{}/status", server.authority);

    let profile = tempfile::tempdir().unwrap();
    let dom = chromium(profile.path(), &url, &["--dump-dom"]).await;
    let console: Vec<&str> = (dom.stderr.lines())
        .filter(|line| line.contains(":CONSOLE") || line.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    for chart in ["rate", "latency", "outcomes", "pool"] {
        let points = data_points(&dom.stdout, chart);
        assert!(points > 0, "chart {chart} has no data:\n{}", dom.stdout);
    }
    // Two bars: ok and memory_limit.
    assert_eq!(data_points(&dom.stdout, "outcomes"), 2, "{}", dom.stdout);
    assert!(
        dom.stdout.contains("4 tool calls"),
        "the summary counts the calls:\n{}",
        dom.stdout
    );
    assert!(
        dom.stdout.contains(r#"<div id="error"></div>"#),
        "{}",
        dom.stdout
    );

    let screenshot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("status.png");
    let _ = std::fs::remove_file(&screenshot);
    let shot = format!("--screenshot={}", screenshot.display());
    chromium(profile.path(), &url, &[&shot, "--window-size=1280,1000"]).await;
    let png = std::fs::read(&screenshot).unwrap_or_else(|e| panic!("no screenshot: {e}"));
    assert!(
        png.starts_with(b"\x89PNG"),
        "a PNG at {}",
        screenshot.display()
    );
}

const TOKEN: &str = "status-page-token-7";

#[tokio::test]
async fn with_a_token_the_page_asks_for_it_then_draws_the_figures() {
    let manifest = test_manifest();
    let server = HttpServer::start(
        &[manifest.arg(), "--token-env", "STATUS_TEST_TOKEN"],
        &[("STATUS_TEST_TOKEN", TOKEN)],
    )
    .await;
    server.loaded().await;
    let mut client = HttpClient::new(&server.url);
    let bearer = format!("Bearer {TOKEN}");
    client.headers.push(("authorization".into(), bearer));
    client.initialize().await;
    for x in [2, 3] {
        client.call("square_root", json!({ "x": x })).await;
    }
    // Without the token: the page, which holds no figures, but not the figures.
    let page = server.get("/status").await.unwrap();
    assert_eq!(page.status(), 200);
    let policy = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(policy.contains("form-action 'none'"), "{policy}");
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"data-token="required""#), "{html}");
    assert_eq!(server.get("/metrics").await.unwrap().status(), 401);

    let url = format!("http://{}/status", server.authority);
    let screenshot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("status-token.png");
    let _ = std::fs::remove_file(&screenshot);
    let script = toolhost_tests::repo_root().join("tests/mcp-peers/status_browser.mjs");
    let run = Command::new(peers().node24)
        .arg(script)
        .arg(chromium_binary())
        .args([url.as_str(), TOKEN, "not-the-token"])
        .arg(&screenshot)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(HANG * 2, run)
        .await
        .expect("the browser finishes")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));

    let before = &seen["before"];
    let charts = before["charts"].as_object().unwrap();
    assert!(charts.values().all(|points| points == 0), "{before}");
    assert!(
        (before["summary"].as_str()).is_some_and(|s| s.contains("a token is needed")),
        "{before}"
    );
    // A wrong token: refused, forgotten, and asked for again; the browser logged the 401 (so
    // the console is watched).
    let refused = &seen["refused"];
    assert!(
        (refused["loginError"].as_str()).is_some_and(|e| e.contains("refused this token")),
        "{refused}"
    );
    assert_eq!(refused["stored"], Value::Null, "{refused}");
    assert!(
        seen["refusedProblems"].to_string().contains("401"),
        "{seen}"
    );
    let after = &seen["after"];
    for chart in ["rate", "latency", "outcomes", "pool"] {
        assert!(
            after["charts"][chart].as_u64() > Some(0),
            "{chart}: {after}"
        );
    }
    assert!(
        (after["summary"].as_str()).is_some_and(|s| s.contains("2 tool calls")),
        "{after}"
    );
    assert_eq!(after["error"], "", "{after}");
    assert_eq!(after["loginShown"], false, "{after}");
    // The token is kept in the tab, never in the page's address.
    assert_eq!(after["url"], url.as_str(), "{after}");
    assert_eq!(after["stored"], TOKEN, "{after}");
    assert_eq!(seen["problems"], json!([]), "console errors: {seen}");
    let png = std::fs::read(&screenshot).unwrap_or_else(|e| panic!("no screenshot: {e}"));
    assert!(
        png.starts_with(b"\x89PNG"),
        "a PNG at {}",
        screenshot.display()
    );
}

struct Loaded {
    stdout: String,
    stderr: String,
}

/// Loads `url` in headless Chromium with `args`, letting its timers run for four seconds of
/// virtual time (the page polls `/metrics` every second); what it printed.
async fn chromium(profile: &Path, url: &str, args: &[&str]) -> Loaded {
    let output = Command::new(chromium_binary())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=4000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(HANG, output)
        .await
        .expect("chromium finishes")
        .expect("chromium runs");
    let loaded = Loaded {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(
        output.status.success(),
        "chromium failed: {}",
        loaded.stderr
    );
    loaded
}

/// The `data-points` the page's script wrote on canvas `id`.
fn data_points(dom: &str, id: &str) -> usize {
    let pattern = format!(r#"id="{id}"[^>]*data-points="(\d+)""#);
    regex::Regex::new(&pattern)
        .unwrap()
        .captures(dom)
        .map_or(0, |found| found[1].parse().unwrap())
}

/// The `chromium` binary; fails the test, naming the set-up script, when there is none.
fn chromium_binary() -> PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("chromium"))
        .find(|path| path.is_file())
        .unwrap_or_else(|| {
            panic!(
                "this test needs Chromium and `chromium` is not on PATH: run \
                 scripts/setup-services.sh (just test does)"
            )
        })
}
