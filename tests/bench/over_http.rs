//! A timed request of the sections that measure `host mcp --http` through the tests' HTTP
//! client (oauth, tasks, telemetry): each checks the answer, so that a refused or failed call
//! is an error of the run, never a fast figure.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};
use toolhost_tests::mcp::{HttpClient, messages};

/// Sends `method` with `params`; the answer's result, and how long it took.
pub async fn send(
    client: &mut HttpClient,
    method: &str,
    params: Value,
) -> anyhow::Result<(Value, Duration)> {
    let (id, message) = client.message(method, params);
    let began = Instant::now();
    let response = client.post(&message).send().await?;
    let status = response.status();
    let body = response.text().await?;
    let took = began.elapsed();
    anyhow::ensure!(status.is_success(), "HTTP {status}: {body}");
    let answer: Value = messages(&body)
        .into_iter()
        .find(|m| m["id"] == json!(id))
        .context("no answer")?;
    let result = answer.get("result").cloned().context(format!("{answer}"))?;
    Ok((result, took))
}

/// One `tools/call` of the calculator's `add` of 1 and 2, checked (3, not an error); how
/// long it took.
pub async fn call_add(client: &mut HttpClient) -> anyhow::Result<Duration> {
    let params = json!({ "name": "add", "arguments": { "a": 1, "b": 2 } });
    let (result, took) = send(client, "tools/call", params).await?;
    anyhow::ensure!(result["isError"] != json!(true), "{result}");
    anyhow::ensure!(result["structuredContent"]["result"] == 3.0, "{result}");
    Ok(took)
}
