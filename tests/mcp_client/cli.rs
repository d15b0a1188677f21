//! The `host` command with MCP servers in its manifest: `host tools` says they are not
//! sandboxed, `host call` calls them, `host run` offers them to the model, and Ctrl-C or
//! SIGTERM of the host leaves no server process behind.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use toolhost_tests::cli::{HostCommand, ManifestFile, model_table};
use toolhost_tests::model::{Format, ScriptedModel, call, calls, text};
use toolhost_tests::peers::{eventually, is_gone, peers};

use super::PATIENCE;
use super::lifecycle::pids;

/// A manifest with mcp-server-time and the fake server (logging to the returned path, in the
/// manifest's directory), and `extra`.
fn manifest(extra: &str) -> (ManifestFile, PathBuf) {
    let peers = peers();
    let manifest = ManifestFile::in_dir(|dir| {
        format!(
            "[mcp_servers.time]\ncommand = {:?}\n\n\
             [mcp_servers.fake]\ncommand = {:?}\nenv = [\"FAKE_LOG={}\"]\nprefix = \"fake_\"\n\
             tools = [\"echo\", \"slow\"]\n\n{extra}",
            peers.time_server(),
            peers.fake_server(&["--grandchild"]),
            dir.join("fake.log").display()
        )
    });
    let log = manifest.dir().join("fake.log");
    (manifest, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_tools_lists_mcp_tools_with_their_server_as_not_sandboxed() {
    let (manifest, _log) = manifest("");

    let out = HostCommand::new("tools").arg(manifest.path()).run().await;
    out.assert_success();
    let stdout = &out.stdout;
    let time = stdout
        .split("\n\n")
        .find(|block| block.starts_with("time "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(time.contains("MCP server"), "{time}");
    assert!(time.contains("mcp-server-time"), "the command: {time}");
    assert!(time.contains("not sandboxed"), "{time}");
    assert!(time.contains("get_current_time, convert_time"), "{time}");
    let fake = stdout
        .split("\n\n")
        .find(|block| block.starts_with("fake "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        fake.contains("fake_echo, fake_slow"),
        "prefix and list: {fake}"
    );

    let out = HostCommand::new("tools")
        .arg(manifest.path())
        .arg("--json")
        .run()
        .await;
    let json = out.json();
    let servers = json["mcp_servers"].as_array().unwrap();
    assert_eq!(servers.len(), 2, "{json}");
    for server in servers {
        assert_eq!(server["sandboxed"], false, "{server}");
        assert_eq!(server["transport"], "stdio");
    }
    assert_eq!(
        servers[0]["name"], "fake",
        "in the manifest's (sorted) order"
    );
    assert_eq!(servers[0]["server"]["name"], "fake", "what it says it is");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_call_calls_an_mcp_tool() {
    let (manifest, _log) = manifest("");
    let out = HostCommand::new("call")
        .arg(manifest.path())
        .args(["get_current_time", r#"{"timezone": "Asia/Tokyo"}"#])
        .run()
        .await;
    out.assert_success();
    assert_eq!(out.json()["timezone"], "Asia/Tokyo");

    let out = HostCommand::new("call")
        .arg(manifest.path())
        .args(["fake_echo", r#"{"text": "via the prefix"}"#])
        .run()
        .await;
    assert_eq!(out.stdout, "via the prefix\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_run_offers_mcp_tools_to_the_model() {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call(
                "c1",
                "get_current_time",
                r#"{"timezone": "Asia/Tokyo"}"#,
            )]),
            text("It is morning in Tokyo."),
        ],
    )
    .await;
    let (manifest, _log) = manifest(&model_table(&model));
    let out = HostCommand::new("run")
        .manifest(&manifest)
        .args(["--json", "What time is it in Tokyo?"])
        .run()
        .await;
    out.assert_success();
    let json = out.json();
    let execution = &json["result"]["executions"][0];
    assert_eq!(execution["name"], "get_current_time");
    assert_eq!(execution["outcome"]["status"], "ok", "{execution}");
    assert!(
        execution["output"].as_str().unwrap().contains("Asia/Tokyo"),
        "{execution}"
    );
    let bodies = model.bodies();
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        ["fake_echo", "fake_slow", "get_current_time", "convert_time"]
    );
    assert_eq!(json["result"]["text"], "It is morning in Tokyo.");
}

/// Signals the host while a call runs; the server and its child must be gone after.
async fn no_orphan_after(signal: &str, exit_code: i32) {
    let (manifest, log) = manifest("");
    let mut child = HostCommand::new("call")
        .arg(manifest.path())
        .args(["fake_slow", r#"{"seconds": 600}"#])
        .into_command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (server, grandchild) = pids(&log).await;
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = tokio::task::spawn_blocking(move || {
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        (status, stderr)
    })
    .await
    .unwrap();
    assert_eq!(out.0.code(), Some(exit_code), "{out:?}");
    assert!(
        eventually(PATIENCE, || is_gone(server) && is_gone(grandchild)).await,
        "after {signal}, server {server} or its child {grandchild} is still running"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_of_the_host_leaves_no_server_behind() {
    no_orphan_after("-TERM", 143).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_of_the_host_leaves_no_server_behind() {
    no_orphan_after("-INT", 130).await;
}
