//! End to end with the local model (llama-server with Gemma 3 270M, started by the host):
//! `host run` with the example manifest, its clock component removed and mcp-server-time
//! added, answers "What time is it in Tokyo?" through the MCP tool.

use serde_json::Value;
use toolhost_tests::cli::HostCommand;
use toolhost_tests::peers::peers;
use toolhost_tests::repo_root;

/// The example manifest without `[components.clock]`, with mcp-server-time, written next to
/// the example's own (its relative paths stay right).
fn manifest(dir: &std::path::Path) -> std::path::PathBuf {
    let example = repo_root().join("example-tools/toolhost.toml");
    let text = std::fs::read_to_string(&example).unwrap();
    let mut table: toml::Table = toml::from_str(&text).unwrap();
    let components = table["components"].as_table_mut().unwrap();
    assert!(
        components.remove("clock").is_some(),
        "the example has a clock"
    );
    for (_, component) in components.iter_mut() {
        let path = component["path"].as_str().unwrap().to_owned();
        component["path"] = repo_root()
            .join("example-tools")
            .join(path)
            .to_str()
            .unwrap()
            .into();
        if let Some(dirs) = component.get_mut("grants").and_then(|g| g.get_mut("dirs")) {
            for grant in dirs.as_array_mut().unwrap() {
                let host = grant["host"].as_str().unwrap().to_owned();
                grant["host"] = repo_root()
                    .join("example-tools")
                    .join(host)
                    .to_str()
                    .unwrap()
                    .into();
            }
        }
    }
    let mut time = toml::Table::new();
    time.insert("command".into(), peers().time_server().into());
    let mut servers = toml::Table::new();
    servers.insert("time".into(), time.into());
    table.insert("mcp_servers".into(), servers.into());
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, toml::to_string(&table).unwrap()).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_tells_the_time_in_tokyo_through_mcp_server_time() {
    toolhost_tests::require_guests();
    let dir = tempfile::tempdir().unwrap();
    let manifest = manifest(dir.path());
    let out = HostCommand::new("run")
        .manifest(&manifest)
        .args(["--json", "What time is it in Tokyo?"])
        .run()
        .await;
    assert!(
        out.success(),
        "{} (just test runs scripts/setup-local-llm.sh and scripts/setup-mcp-peers.sh first)",
        out.stderr
    );
    let json = out.json();
    let result = &json["result"];
    let call = result["executions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "get_current_time" && e["outcome"]["status"] == "ok")
        .unwrap_or_else(|| panic!("the model did not get the time from the MCP tool: {json:#}"));
    let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments["timezone"], "Asia/Tokyo", "{call}");
    let now: Value = serde_json::from_str(call["output"].as_str().unwrap()).unwrap();
    // "2026-11-23T14:23:13+09:00": the answer gives the hour and minute.
    let time = &now["datetime"].as_str().unwrap()[11..16];
    let answer = result["text"].as_str().unwrap();
    let hour = time[..2].trim_start_matches('0');
    assert!(
        answer.contains(time) || answer.contains(&format!("{hour}:{}", &time[3..])),
        "the answer {answer:?} does not give the time {time}"
    );
}
