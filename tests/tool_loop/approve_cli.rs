//! `host run` and `host chat` asking before acting, as a user meets them: the prompt on a
//! terminal (a real pseudo-terminal), `--yes`, the rejection without a terminal, the audit
//! log (killed mid-run), and `host chat --session`.

use std::ffi::CStr;
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::fd::FromRawFd as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolhost_tests::cli::{HostCommand, ManifestFile};
use toolhost_tests::components::{CALCULATOR, MISBEHAVE};
use toolhost_tests::model::{Format, ScriptedModel, call, calls, text};

use super::sent;

/// A manifest with the calculator and the misbehaving tools, and `extra` appended.
fn manifest(extra: &str) -> ManifestFile {
    ManifestFile::calculator(&format!(
        "[components.misbehave]\npath = {MISBEHAVE:?}\n\n{extra}"
    ))
}

/// `host run` against `model` with `manifest`.
fn run(model: &ScriptedModel, manifest: &ManifestFile) -> HostCommand {
    HostCommand::new("run").manifest(manifest).model(model)
}

/// `host chat` against `model` with `manifest`, its conversation saved in `session`.
fn chat(model: &ScriptedModel, manifest: &ManifestFile, session: &Path) -> HostCommand {
    HostCommand::new("chat")
        .manifest(manifest)
        .model(model)
        .arg("--session")
        .arg(session)
}

/// A pseudo-terminal: the controlling side, and the terminal a child gets as stdin/stderr.
#[allow(unsafe_code)]
fn pty() -> (File, File) {
    // SAFETY: plain libc calls on a descriptor this function owns; `name` is a buffer of the
    // size passed, which ptsname_r fills with a NUL-terminated path.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            master >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        let master = File::from_raw_fd(master);
        let fd = std::os::fd::AsRawFd::as_raw_fd(&master);
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
        let path = CStr::from_ptr(name.as_ptr()).to_str().unwrap().to_owned();
        let terminal = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(path)
            .unwrap();
        (master, terminal)
    }
}

/// A child whose stdin and stderr are a terminal: what it shows there, and a way to type.
pub(crate) struct OnTerminal {
    child: Child,
    keyboard: File,
    screen: Arc<Mutex<String>>,
    reader: std::thread::JoinHandle<()>,
}

impl OnTerminal {
    pub(crate) fn spawn(mut command: Command) -> Self {
        let (master, terminal) = pty();
        command
            .stdin(terminal.try_clone().unwrap())
            .stderr(terminal)
            .stdout(Stdio::piped());
        let child = command.spawn().unwrap();
        drop(command); // closes this process's copies of the terminal
        let screen = Arc::new(Mutex::new(String::new()));
        let mut reader = master.try_clone().unwrap();
        let shown = screen.clone();
        let reader = std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // Ends with an error (EIO) once the child and its copies of the terminal are gone.
            while let Ok(n @ 1..) = reader.read(&mut buffer) {
                shown
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        Self {
            child,
            keyboard: master,
            screen,
            reader,
        }
    }

    /// Waits for the child to end: its output, and everything the terminal showed.
    pub(crate) fn finish(self) -> (std::process::Output, String) {
        let out = self.child.wait_with_output().unwrap();
        self.reader.join().unwrap();
        let screen = self.screen.lock().unwrap().clone();
        (out, screen)
    }

    fn screen(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    /// Waits until `what` has been shown `times` times.
    pub(crate) fn wait_for(&self, what: &str, times: usize) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.screen().matches(what).count() < times {
            assert!(
                Instant::now() < deadline,
                "waited for `{what}` ×{times}; the terminal shows:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn type_line(&mut self, line: &str) {
        self.keyboard.write_all(line.as_bytes()).unwrap();
        self.keyboard.write_all(b"\n").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_asks_on_the_terminal_with_the_tool_its_arguments_and_grants() {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("c1", "add", r#"{"a": 2, "b": 40}"#)]),
            calls(vec![
                call("c2", "add", r#"{"a": 1, "b": 1}"#),
                call("c3", "multiply", r#"{"a": 6, "b": 7}"#),
            ]),
            calls(vec![call("c4", "add", r#"{"a": 5, "b": 5}"#)]),
            text("done"),
        ],
    )
    .await;
    let manifest =
        manifest("[tools.add]\napproval = \"always\"\n\n[tools.multiply]\napproval = \"always\"\n");
    let command = run(&model, &manifest).arg("add things").into_command();
    let screen = tokio::task::spawn_blocking(move || {
        let mut terminal = OnTerminal::spawn(command);
        terminal.wait_for("run it?", 1);
        terminal.type_line("y");
        terminal.wait_for("run it?", 2);
        terminal.type_line("always");
        terminal.wait_for("run it?", 3);
        terminal.type_line("maybe");
        terminal.wait_for("please answer y, n or a", 1);
        terminal.type_line("n");
        terminal.wait_for("why not?", 1);
        terminal.type_line("no multiplying today");
        let (out, screen) = terminal.finish();
        assert!(out.status.success(), "{screen}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
        screen
    })
    .await
    .unwrap();
    assert!(
        screen.contains(r#"? add wants to run with {"a": 2, "b": 40}"#),
        "{screen}"
    );
    assert!(screen.contains("from component `calculator`"), "{screen}");
    assert!(
        screen.contains("holds: nothing (no files, no network, no environment)"),
        "{screen}"
    );
    assert!(screen.contains(r#"? multiply wants to run with {"a": 6, "b": 7}"#));
    assert_eq!(
        screen.matches("run it?").count(),
        4,
        "c4 ran without asking (always for add); the bad answer was asked again: {screen}"
    );
    let bodies = model.bodies();
    let results = sent::results(Format::OpenAi, &bodies[2]);
    assert_eq!(results[1].1, "2.0");
    assert!(
        results[2].1.contains("not approved") && results[2].1.contains("no multiplying today"),
        "{results:?}"
    );
    assert_eq!(sent::results(Format::OpenAi, &bodies[3])[3].1, "10.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_a_call_that_needs_approval_is_rejected_and_yes_allows_it() {
    let turns = || {
        vec![
            calls(vec![
                call("c1", "add", r#"{"a": 2, "b": 40}"#),
                call("c2", "count", "{}"),
                call("c3", "multiply", r#"{"a": 2, "b": 3}"#),
            ]),
            text("answered"),
        ]
    };
    // `add` asks by its own setting; `count` by the rule, as its component holds HTTP;
    // `multiply` does not ask.
    let manifest = manifest(
        "[tools.add]\napproval = \"always\"\n\n[approval]\nask_for = [\"write-dir\", \"http\"]\n",
    );
    let manifest_text = std::fs::read_to_string(&manifest).unwrap().replace(
        &format!("path = {MISBEHAVE:?}\n"),
        &format!("path = {MISBEHAVE:?}\ngrants.http = [\"127.0.0.1:9\"]\n"),
    );
    std::fs::write(&manifest, manifest_text).unwrap();
    let model = ScriptedModel::start(Format::OpenAi, turns()).await;
    let out = run(&model, &manifest).arg("add").run().await;
    let stderr = &out.stderr;
    out.assert_success();
    assert!(
        stderr.contains("add needs approval, and there is no terminal to ask on: rejected")
            && stderr.contains("--yes")
            && stderr.contains("approval = \"never\" under [tools.add]"),
        "{stderr}"
    );
    assert!(stderr.contains("count needs approval"), "{stderr}");
    assert!(!stderr.contains("multiply needs approval"), "{stderr}");
    let results = sent::results(Format::OpenAi, &model.bodies()[1]);
    assert!(results[0].1.contains("not approved"), "{results:?}");
    assert!(results[1].1.contains("not approved"), "{results:?}");
    assert_eq!(results[2].1, "6.0");

    let model = ScriptedModel::start(Format::OpenAi, turns()).await;
    let out = run(&model, &manifest).args(["--yes", "add"]).run().await;
    let stderr = &out.stderr;
    out.assert_success();
    assert!(!stderr.contains("needs approval"), "{stderr}");
    let results = sent::results(Format::OpenAi, &model.bodies()[1]);
    let contents: Vec<&str> = results.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(contents, ["42.0", "1", "6.0"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_mid_run_leaves_every_completed_call_in_the_audit_log() {
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call(
                "c1",
                "add",
                r#"{"a": 1, "b": 1, "api_key": "sk-live-123"}"#,
            )]),
            calls(vec![call("c2", "multiply", r#"{"a": 2, "b": 3}"#)]),
            calls(vec![call(
                "c3",
                "remember",
                &format!(r#"{{"text": "{}"}}"#, "x".repeat(5000)),
            )]),
            calls(vec![call("c4", "square_root", r#"{"x": -1}"#)]),
            calls(vec![call("c5", "sleep", r#"{"ms": 25000}"#)]),
            text("never"),
        ],
    )
    .await;
    let manifest = manifest("");
    let audit = manifest.dir().join("audit.jsonl");
    let mut command = run(&model, &manifest)
        .arg("--audit")
        .arg(&audit)
        .arg("go")
        .into_command();
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    // The fifth request carries the fourth call's result: by then four calls are complete,
    // and the fifth (a long sleep) is being started.
    let deadline = Instant::now() + Duration::from_secs(120);
    while model.requests().len() < 5 {
        assert!(
            Instant::now() < deadline,
            "the run never got to its fifth call"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let mode = std::fs::metadata(&audit).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the audit log is the owner's only");
    let text = std::fs::read_to_string(&audit).unwrap();
    assert!(text.ends_with('\n'), "no torn line: {text:?}");
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["c1", "c2", "c3", "c4"],
        "every completed call, and no other"
    );

    let first = &lines[0];
    assert!(first["time"].as_str().unwrap().ends_with('Z'), "{first}");
    assert!(first["run_id"].as_str().unwrap().starts_with("run-"));
    assert!(lines.iter().all(|l| l["run_id"] == first["run_id"]));
    assert_eq!(first["round"], 1);
    assert_eq!(first["tool"], "add");
    assert_eq!(first["source"]["kind"], "component");
    assert_eq!(first["source"]["path"], CALCULATOR);
    assert_eq!(first["source"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(first["grants"], serde_json::json!([]));
    assert_eq!(first["arguments"]["api_key"], "[redacted]", "{first}");
    assert_eq!(first["arguments"]["a"], 1);
    assert_eq!(first["outcome"], "ok");
    assert!(first["duration_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(first["approval"], "not_required");
    assert!(!text.contains("sk-live-123"));
    let long = lines[2]["arguments"]["text"].as_str().unwrap();
    assert!(
        long.len() < 400 && long.ends_with("more characters]"),
        "{long}"
    );
    assert_eq!(lines[3]["outcome"], "invalid_arguments");
    assert!(lines[3]["error"].as_str().unwrap().contains("negative"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_session_resumes_a_saved_conversation_and_refuses_a_damaged_one() {
    let manifest = manifest("");
    let session = manifest.dir().join("chat.json");

    let first = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("c1", "add", r#"{"a": 2, "b": 40}"#)]),
            text("It is 42."),
        ],
    )
    .await;
    let out = chat(&first, &manifest, &session)
        .stdin("What is 2+40?\n")
        .run()
        .await;
    out.assert_success();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
    assert_eq!(saved["version"], toolhost::agent::FORMAT_VERSION);
    let mode = std::fs::metadata(&session).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the session is the owner's only");

    // Another process goes on with the conversation.
    let second = ScriptedModel::start(Format::OpenAi, vec![text("84.")]).await;
    let out = chat(&second, &manifest, &session)
        .stdin("Double it.\n")
        .run()
        .await;
    out.assert_success();
    assert_eq!(out.stdout, "84.\n");
    let messages = second.bodies()[0]["messages"].to_string();
    for earlier in ["What is 2+40?", "42.0", "It is 42.", "Double it."] {
        assert!(
            messages.contains(earlier),
            "{earlier} missing from {messages}"
        );
    }

    // A damaged or newer file is an error that says what to do, and is left as it is.
    for (content, says) in [
        ("{\"version\": 1, \"messages\": [", "not JSON"),
        (
            "{\"version\": 7, \"messages\": [], \"next_id\": 0}",
            "format version 7",
        ),
    ] {
        std::fs::write(&session, content).unwrap();
        let untouched = ScriptedModel::start(Format::OpenAi, vec![text("no")]).await;
        let out = chat(&untouched, &manifest, &session)
            .stdin("hello\n")
            .run()
            .await;
        let stderr = &out.stderr;
        assert_eq!(out.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("cannot resume the session")
                && stderr.contains(says)
                && stderr.contains("move it away"),
            "{stderr}"
        );
        assert_eq!(std::fs::read_to_string(&session).unwrap(), content);
        assert!(untouched.requests().is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_killed_while_asking_resumes_the_question_in_another_process() {
    let manifest = manifest("[tools.add]\napproval = \"always\"\n");
    let session = manifest.dir().join("chat.json");

    let first = ScriptedModel::start(
        Format::OpenAi,
        vec![calls(vec![call("c1", "add", r#"{"a": 2, "b": 40}"#)])],
    )
    .await;
    let command = chat(&first, &manifest, &session).into_command();
    tokio::task::spawn_blocking(move || {
        let mut terminal = OnTerminal::spawn(command);
        terminal.wait_for("> ", 1);
        terminal.type_line("What is 2+40?");
        terminal.wait_for("run it?", 1);
        terminal.child.kill().unwrap(); // SIGKILL, with the question on the screen
        terminal.finish();
    })
    .await
    .unwrap();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
    assert_eq!(
        saved["run"]["turn"]["approvals"][0]["call_id"], "c1",
        "the session holds the paused run: {saved}"
    );

    // Another process, another model server: the question comes back first.
    let second = ScriptedModel::start(Format::OpenAi, vec![text("It is 42.")]).await;
    let command = chat(&second, &manifest, &session).into_command();
    let (stdout, screen) = tokio::task::spawn_blocking(move || {
        let mut terminal = OnTerminal::spawn(command);
        terminal.wait_for("run it?", 1);
        terminal.type_line("y");
        terminal.wait_for("> ", 1);
        terminal.type_line("/exit");
        let (out, screen) = terminal.finish();
        assert!(out.status.success(), "{screen}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), screen)
    })
    .await
    .unwrap();
    assert!(
        screen.contains(r#"? add wants to run with {"a": 2, "b": 40}"#),
        "{screen}"
    );
    assert_eq!(stdout, "It is 42.\n");
    let results = sent::results(Format::OpenAi, &second.bodies()[0]);
    assert_eq!(results, [("c1".to_owned(), "42.0".to_owned(), false)]);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&session).unwrap()).unwrap();
    assert!(saved.get("run").is_none(), "the run is over: {saved}");
}
