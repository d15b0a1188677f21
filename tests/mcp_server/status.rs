//! `/status` of `host mcp --http`, loaded in headless Chromium (Debian's `chromium`, installed
//! by `scripts/setup-services.sh`): the page renders, each chart has data, the console has no
//! error; a screenshot is kept under the target directory
//! (`$CARGO_TARGET_TMPDIR/status.png`).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::json;
use tokio::process::Command;
use toolhost_tests::mcp::{HANG, HttpServer};

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
