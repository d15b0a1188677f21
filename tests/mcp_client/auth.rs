//! MCP servers that ask for authorization (OAuth 2.1): `host auth login` against a real
//! authorization server (the Python `mcp` SDK's, in tests/mcp-peers/oauth_server.py) with a
//! scripted browser, `host run` calling the protected server's tool, the token file, a second
//! run without a login, an expired token refreshed; authorization servers that misbehave
//! (tests/mcp-peers/bad_oauth_server.py), refused with nothing stored; and no secret in
//! anything the host writes.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use toolhost_tests::cli::{HostCommand, HostOutput, ManifestFile, model_table};
use toolhost_tests::model::{Format, ScriptedModel, Turn, call, calls, text};
use toolhost_tests::peers::peers;
use toolhost_tests::repo_root;

/// A Python server the test started, and every line it printed after its port.
struct PyServer {
    _child: Child,
    url: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl PyServer {
    async fn start(script: &str, args: &[&str]) -> Self {
        let mut child = Command::new(peers().python())
            .arg(repo_root().join("tests/mcp-peers").join(script))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("python starts the server");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
        let port = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
            .await
            .ok()
            .and_then(|line| line.ok().flatten())
            .unwrap_or_else(|| panic!("{script} prints its port"));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let kept = lines.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = stdout.next_line().await {
                kept.lock().unwrap().push(line);
            }
        });
        Self {
            _child: child,
            url: format!("http://127.0.0.1:{}/mcp", port.trim()),
            lines,
        }
    }

    fn printed(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

/// A cache directory of the test's own, for its logins.
struct Cache {
    dir: tempfile::TempDir,
}

impl Cache {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn command(&self, subcommand: &str) -> HostCommand {
        HostCommand::new(subcommand).env("TOOLHOST_CACHE", self.dir.path())
    }

    /// The login files kept.
    fn logins(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.dir.path().join("auth")) {
            Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        }
    }
}

fn manifest(url: &str, auth: &str, model: &str) -> ManifestFile {
    ManifestFile::new(&format!(
        "{model}\n[mcp_servers.notes]\nurl = \"{url}\"\n{auth}\n"
    ))
}

async fn login(cache: &Cache, manifest: &ManifestFile, extra: &[&str]) -> HostOutput {
    cache
        .command("auth")
        .args(["login", "notes", "--scripted", "-m", manifest.arg()])
        .args(extra)
        .run()
        .await
}

/// `host run --json` where the model calls `count_notes` once; what the tool answered.
async fn run_counting(cache: &Cache, url: &str, auth: &str, extra: &[&str]) -> (HostOutput, Value) {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("c1", "count_notes", "{}")]),
            text("There are 3 notes."),
        ],
    )
    .await;
    let manifest = manifest(url, auth, &model_table(&model));
    let out = cache
        .command("run")
        .manifest(&manifest)
        .args(extra)
        .args(["--json", "How many notes are there?"])
        .run()
        .await;
    let execution = if out.success() {
        out.json()["result"]["executions"][0].clone()
    } else {
        Value::Null
    };
    (out, execution)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_serves_every_run_after_it_and_an_expired_token_is_refreshed() {
    let server = PyServer::start("oauth_server.py", &[]).await;
    let cache = Cache::new();

    let (out, _) = run_counting(&cache, &server.url, "", &[]).await;
    assert!(!out.success(), "{}", out.stderr);
    assert!(
        out.stderr.contains("run `host auth login notes`"),
        "{}",
        out.stderr
    );

    let manifest = manifest(&server.url, "", "");
    let out = login(&cache, &manifest, &[]).await;
    out.assert_success();
    assert!(
        out.stderr
            .contains("logged in to `notes` with scopes notes"),
        "{}",
        out.stderr
    );
    let files = cache.logins();
    assert_eq!(files.len(), 1, "{files:?}");
    let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    let (out, execution) = run_counting(&cache, &server.url, "", &[]).await;
    out.assert_success();
    assert_eq!(token_of(&execution), 1);
    // A second run: the same login, no new one.
    let (_, execution) = run_counting(&cache, &server.url, "", &[]).await;
    assert_eq!(token_of(&execution), 1);

    // The token has expired (as the file says): the run refreshes it, unnoticed.
    age_login(&files[0]);
    let status = cache
        .command("auth")
        .args(["status", "-m", manifest.arg()])
        .run()
        .await;
    assert!(
        status.stdout.contains("has expired and is refreshed"),
        "{}",
        status.stdout
    );
    let (out, execution) = run_counting(&cache, &server.url, "", &[]).await;
    out.assert_success();
    assert_eq!(token_of(&execution), 2);
    let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    let out = cache
        .command("auth")
        .args(["logout", "notes", "-m", manifest.arg()])
        .run()
        .await;
    out.assert_success();
    assert!(cache.logins().is_empty());
}

/// Which token the server says a successful `count_notes` call came with.
fn token_of(execution: &Value) -> u32 {
    assert_eq!(execution["outcome"]["status"], "ok", "{execution}");
    let output = execution["output"].as_str().unwrap_or_default();
    output
        .rsplit_once("(token #")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{execution}"))
}

/// Makes the stored login's token as old as its lifetime.
fn age_login(path: &Path) {
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    file["credentials"]["token_received_at"] = Value::from(1);
    std::fs::write(path, serde_json::to_vec(&file).unwrap()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_that_expires_during_a_run_is_refreshed_between_calls() {
    // Tokens of 3 s; the model takes some 5 s to ask for the second call, by which time the
    // token the run started with has expired.
    let server = PyServer::start("oauth_server.py", &["--lifetime", "3"]).await;
    let cache = Cache::new();
    login(&cache, &manifest(&server.url, "", ""), &[])
        .await
        .assert_success();
    let slow_second_call = Turn::Stall {
        turn: Box::new(calls(vec![call(
            "c2",
            "count_notes",
            r#"{"folder": "archive"}"#,
        )])),
        pause: Duration::from_millis(600),
    };
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("c1", "count_notes", "{}")]),
            slow_second_call,
            text("Still 3."),
        ],
    )
    .await;
    let manifest = manifest(&server.url, "", &model_table(&model));
    let out = cache
        .command("run")
        .manifest(&manifest)
        .args(["--json", "Count the notes twice."])
        .run()
        .await;
    out.assert_success();
    let json = out.json();
    let executions = json["result"]["executions"].as_array().unwrap();
    let tokens: Vec<u32> = executions.iter().map(token_of).collect();
    assert_eq!(tokens.len(), 2, "{json}");
    assert!(
        tokens[1] > tokens[0],
        "{tokens:?} {json} {:?}",
        server.printed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_authorization_servers_are_refused_with_nothing_stored() {
    let cases = [
        ("issuer", "issuer"),
        ("resource", "resource"),
        (
            "garbage",
            "exchanging the authorization code for tokens failed",
        ),
        ("huge", "none came, or it was over 1 MiB"),
        ("state", "the redirect's `state` is not the login's"),
    ];
    for (mode, expected) in cases {
        let server = PyServer::start("bad_oauth_server.py", &[mode]).await;
        let cache = Cache::new();
        let manifest = manifest(&server.url, "", "");
        let out = login(&cache, &manifest, &[]).await;
        assert_eq!(out.code(), Some(2), "{mode}: {}", out.stderr);
        assert!(
            out.stderr.contains("logging in to `notes` failed"),
            "{mode}: {}",
            out.stderr
        );
        assert!(out.stderr.contains(expected), "{mode}: {}", out.stderr);
        assert!(cache.logins().is_empty(), "{mode}: {:?}", cache.logins());
        for secret in ["the-code", "fine-token", "huge-token"] {
            assert!(!out.stderr.contains(secret), "{mode}: {}", out.stderr);
        }
        let status = cache
            .command("auth")
            .args(["status", "-m", manifest.arg()])
            .run()
            .await;
        assert!(
            status.stdout.contains("notes: not logged in"),
            "{mode}: {}",
            status.stdout
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_code_or_client_secret_reaches_logs_json_audit_or_state() {
    const SECRET: &str = "S3CRET-of-the-toolhost-client";
    let server = PyServer::start(
        "oauth_server.py",
        &["--lifetime", "3", "--client", &format!("toolhost:{SECRET}")],
    )
    .await;
    let cache = Cache::new();
    let auth = "auth = { client_id = \"toolhost\", client_secret = \"${NOTES_SECRET}\" }";
    let traced =
        |command: HostCommand| command.env("RUST_LOG", "trace").env("NOTES_SECRET", SECRET);
    let mut seen = Vec::new();

    let out = traced(cache.command("auth"))
        .args(["login", "notes", "--scripted", "-m"])
        .arg(manifest(&server.url, auth, "").path())
        .run()
        .await;
    out.assert_success();
    seen.extend([out.stdout, out.stderr]);
    // The token lasts 3 s: the run below refreshes it (with the client secret).
    tokio::time::sleep(Duration::from_secs(4)).await;

    let files = tempfile::tempdir().unwrap();
    let audit = files.path().join("audit.jsonl");
    let session = files.path().join("session.json");
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("c1", "count_notes", "{}")]),
            text("There are 3 notes."),
            calls(vec![call("c2", "count_notes", r#"{"folder": "archive"}"#)]),
            text("3 there too."),
        ],
    )
    .await;
    let manifest = manifest(&server.url, auth, &model_table(&model));
    let out = traced(cache.command("run"))
        .manifest(&manifest)
        .arg("--audit")
        .arg(&audit)
        .args(["--json", "How many notes are there?"])
        .run()
        .await;
    out.assert_success();
    assert!(
        token_of(&out.json()["result"]["executions"][0]) >= 2,
        "{}",
        out.stdout
    );
    seen.extend([out.stdout, out.stderr]);
    let out = traced(cache.command("chat"))
        .manifest(&manifest)
        .arg("--session")
        .arg(&session)
        .stdin("And in the archive?\n")
        .run()
        .await;
    out.assert_success();
    seen.extend([out.stdout, out.stderr]);
    let out = traced(cache.command("auth"))
        .args(["status", "--json", "-m", manifest.arg()])
        .run()
        .await;
    seen.extend([out.stdout, out.stderr]);
    for file in [&audit, &session] {
        seen.push(std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}")));
    }

    // What the authorization server issued (codes, access and refresh tokens), and the
    // client's secret: none of it anywhere but in the login file.
    let mut secrets: Vec<String> = server
        .printed()
        .iter()
        .filter_map(|line| line.strip_prefix("issued "))
        .flat_map(|rest| rest.split_whitespace().filter(|word| word.len() > 16))
        .map(str::to_owned)
        .collect();
    assert!(secrets.len() >= 5, "{secrets:?}");
    secrets.push(SECRET.to_owned());
    for text in &seen {
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "{secret} in:\n{text}");
        }
    }
}
