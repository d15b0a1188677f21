//! Grants: a tool sees what it is granted and nothing else.

use std::path::Path;

use serde_json::json;
use toolhost::sandbox::{DirGrant, EnvGrant};
use toolhost::{CallContext, CallError, ErrorKind, Toolbox};
use toolhost_tests::components::{FILES, MISBEHAVE, WEATHER};
use toolhost_tests::error::{assert_error_chain_contains, assert_error_chain_lacks};
use toolhost_tests::load;
use toolhost_tests::server::{Reply, TestServer};

fn context() -> CallContext {
    CallContext::default()
}

/// A host directory layout: `data/` (granted) with a report and a symlink pointing out of it,
/// and `secret.txt` next to `data/` (not granted).
fn data_layout() -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("a temporary directory");
    let data = root.path().join("data");
    std::fs::create_dir(&data).expect("created");
    std::fs::write(data.join("report.txt"), "quarterly numbers: up").expect("written");
    std::fs::write(root.path().join("secret.txt"), "the launch codes").expect("written");
    std::os::unix::fs::symlink(root.path().join("secret.txt"), data.join("shortcut.txt"))
        .expect("symlink");
    root
}

async fn files_tool(data: &Path) -> Toolbox {
    let data = data.to_owned();
    load(FILES, move |config| {
        config.grants.dirs.push(DirGrant {
            host: data,
            guest: "/data".into(),
            write: false,
        });
    })
    .await
}

async fn read(toolbox: &Toolbox, path: &str) -> Result<String, CallError> {
    let arguments = json!({ "path": path }).to_string();
    toolbox
        .call("read_file", &arguments, &context())
        .await
        .map(|o| o.text)
}

#[tokio::test]
async fn a_granted_directory_can_be_listed_and_read() {
    let root = data_layout();
    let toolbox = files_tool(&root.path().join("data")).await;
    let listing = toolbox
        .call("list_files", r#"{"path": "/data"}"#, &context())
        .await
        .expect("listing /data succeeds");
    let entries: serde_json::Value = serde_json::from_str(&listing.text).expect("JSON");
    let names: Vec<&str> = entries
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(names.contains(&"report.txt"), "{names:?}");
    assert_eq!(
        read(&toolbox, "/data/report.txt").await.expect("readable"),
        "quarterly numbers: up"
    );
}

/// With a working directory, a relative path resolves in it, as in a process, and it grants
/// nothing more: `..` still leads nowhere.
#[tokio::test]
async fn relative_paths_resolve_in_the_working_directory_and_no_further() {
    let root = data_layout();
    let data = root.path().join("data");
    let toolbox = load(FILES, move |config| {
        config.grants.dirs.push(DirGrant {
            host: data,
            guest: "/data".into(),
            write: false,
        });
        config.grants.workdir = Some("/data".into());
    })
    .await;
    assert_eq!(
        read(&toolbox, "report.txt").await.expect("readable"),
        "quarterly numbers: up"
    );
    assert_eq!(
        read(&toolbox, "./report.txt").await.expect("readable"),
        "quarterly numbers: up"
    );
    for escape in ["../secret.txt", "./../secret.txt", "shortcut.txt"] {
        assert!(
            read(&toolbox, escape).await.is_err(),
            "{escape} must stay outside the tool's reach"
        );
    }
    let written = toolbox
        .call("write_note", r#"{"title": "x", "text": "y"}"#, &context())
        .await;
    assert!(
        written.is_err(),
        "the working directory adds no write access"
    );

    // Without one, a relative path finds nothing.
    let plain = files_tool(&root.path().join("data")).await;
    assert!(read(&plain, "report.txt").await.is_err());
}

#[tokio::test]
async fn a_working_directory_must_be_a_granted_one() {
    let mut config = toolhost::ComponentConfig::new(FILES);
    config.grants.workdir = Some("/data".into());
    let Err(error) = Toolbox::builder(&toolhost_tests::runtime())
        .component(config)
        .build()
        .await
    else {
        panic!("nothing is granted at /data, yet the component loaded");
    };
    assert_error_chain_contains(
        &error,
        "working directory `/data` is not a granted directory",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_operations_also_work_handed_to_a_thread_pool() {
    let root = data_layout();
    let runtime = toolhost::Runtime::new(toolhost::RuntimeConfig {
        cache_dir: Some(toolhost_tests::target_dir().join("test-compile-cache")),
        file_io_on_call_thread: false,
        ..toolhost::RuntimeConfig::default()
    })
    .expect("the runtime starts");
    let mut config = toolhost::ComponentConfig::new(FILES);
    config.grants.dirs.push(DirGrant {
        host: root.path().join("data"),
        guest: "/data".into(),
        write: false,
    });
    let toolbox = Toolbox::builder(&runtime)
        .component(config)
        .build()
        .await
        .expect("files loads");
    assert_eq!(
        read(&toolbox, "/data/report.txt").await.expect("readable"),
        "quarterly numbers: up"
    );
    assert!(read(&toolbox, "/data/../secret.txt").await.is_err());
}

#[tokio::test]
async fn nothing_outside_the_granted_directory_is_visible() {
    let root = data_layout();
    let toolbox = files_tool(&root.path().join("data")).await;
    let secret = root.path().join("secret.txt");
    for path in [
        "/data/../secret.txt",
        "/data/shortcut.txt",
        "/secret.txt",
        "/etc/passwd",
        secret.to_str().expect("UTF-8"),
    ] {
        match read(&toolbox, path).await {
            Ok(text) => panic!("reading {path} succeeded: {text:?}"),
            Err(error) => {
                assert_eq!(error.kind(), ErrorKind::ToolFailed, "{path}: {error}");
                assert_error_chain_lacks(&error, "launch codes");
            }
        }
    }
    // The host keeps serving calls to the same tool.
    assert!(read(&toolbox, "/data/report.txt").await.is_ok());
}

#[tokio::test]
async fn without_a_grant_there_is_no_file_system() {
    let toolbox = load(FILES, |_| {}).await;
    let error = toolbox
        .call("list_files", r#"{"path": "/data"}"#, &context())
        .await
        .expect_err("nothing is granted");
    assert_eq!(error.kind(), ErrorKind::ToolFailed);
}

/// The files component with `dir` granted as its `/notes`, writable or not.
async fn files_with_notes(dir: &Path, write: bool) -> Toolbox {
    let dir = dir.to_owned();
    load(FILES, move |config| {
        config.grants.dirs.push(DirGrant {
            host: dir,
            guest: "/notes".into(),
            write,
        });
    })
    .await
}

#[tokio::test]
async fn a_read_only_directory_cannot_be_written() {
    let notes = tempfile::tempdir().expect("a temporary directory");
    let toolbox = files_with_notes(notes.path(), false).await;
    let error = toolbox
        .call("write_note", r#"{"title": "x", "text": "y"}"#, &context())
        .await
        .expect_err("/notes is read-only");
    assert_eq!(error.kind(), ErrorKind::ToolFailed);
    assert_eq!(
        std::fs::read_dir(notes.path()).expect("readable").count(),
        0
    );
}

#[tokio::test]
async fn only_granted_environment_variables_are_visible() {
    // cargo sets CARGO_PKG_NAME for every test process.
    let inherited = std::env::var("CARGO_PKG_NAME").expect("set by cargo");
    let toolbox = load(MISBEHAVE, |config| {
        config
            .grants
            .env
            .push(EnvGrant::Inherit("CARGO_PKG_NAME".into()));
        config
            .grants
            .env
            .push(EnvGrant::Set("GREETING".into(), "hello".into()));
    })
    .await;
    let env = |name: &str| {
        let arguments = json!({ "name": name }).to_string();
        let toolbox = &toolbox;
        async move {
            toolbox
                .call("env", &arguments, &context())
                .await
                .map(|o| o.text)
        }
    };
    assert_eq!(env("GREETING").await.expect("granted"), "hello");
    assert_eq!(env("CARGO_PKG_NAME").await.expect("granted"), inherited);
    let error = env("PATH").await.expect_err("PATH is not granted");
    assert_error_chain_contains(&error, "PATH is not set");
    assert!(std::env::var("PATH").is_ok(), "the host does have PATH");
}

fn weather_server() -> impl Fn(&toolhost_tests::server::Recorded) -> Reply + Send + Sync {
    |request| {
        if request.path == "/Paris?format=j1" {
            Reply::json(
                200,
                &json!({
                    "current_condition": [{
                        "temp_C": "14", "FeelsLikeC": "12", "humidity": "71",
                        "windspeedKmph": "9", "weatherDesc": [{ "value": "Partly cloudy" }]
                    }],
                    "nearest_area": [{
                        "areaName": [{ "value": "Paris" }], "country": [{ "value": "France" }]
                    }]
                }),
            )
        } else {
            Reply::text(404, "unknown location")
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_reaches_granted_hosts_only() {
    let server = TestServer::start(weather_server()).await;
    let base = format!("WEATHER_BASE_URL={}", server.url());

    let granted = load(WEATHER, |config| {
        config.grants.env.push(base.parse().expect("an env grant"));
        config
            .grants
            .http
            .push(server.authority().parse().expect("a host pattern"));
    })
    .await;
    let output = granted
        .call("current_weather", r#"{"city": "Paris"}"#, &context())
        .await
        .expect("the weather comes back");
    let weather: serde_json::Value = serde_json::from_str(&output.text).expect("JSON");
    assert_eq!(weather["location"], "Paris, France");
    assert_eq!(weather["temperature_c"], 14.0);
    assert_eq!(weather["condition"], "Partly cloudy");
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.requests()[0].path, "/Paris?format=j1");

    let error = granted
        .call("current_weather", r#"{"city": "Atlantis"}"#, &context())
        .await
        .expect_err("the server knows no Atlantis");
    assert_eq!(error.kind(), ErrorKind::ToolFailed);

    // Same server, but the tool may only talk to another host: refused before any request.
    let refused = load(WEATHER, |config| {
        config.grants.env.push(base.parse().expect("an env grant"));
        config
            .grants
            .http
            .push("wttr.in".parse().expect("a host pattern"));
    })
    .await;
    let before = server.requests().len();
    let error = refused
        .call("current_weather", r#"{"city": "Paris"}"#, &context())
        .await
        .expect_err("127.0.0.1 is not granted");
    match &error {
        CallError::CapabilityDenied {
            tool,
            capability,
            grant,
        } => {
            assert_eq!(tool, "current_weather");
            assert_eq!(
                capability,
                &format!("HTTP access to {}", server.authority())
            );
            let authority = server.authority();
            assert_eq!(
                grant,
                &format!(
                    "grants.http = [\"{authority}\"] in the manifest, or --allow-http {authority}"
                )
            );
        }
        other => panic!("expected a denied capability, got {other:?}"),
    }
    assert_eq!(
        server.requests().len(),
        before,
        "no request reached the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_sockets_need_a_grant() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let address = listener.local_addr().expect("bound").to_string();
    tokio::spawn(async move { while listener.accept().await.is_ok() {} });
    let arguments = json!({ "address": address }).to_string();

    let denied = load(MISBEHAVE, |_| {}).await;
    let error = denied
        .call("connect", &arguments, &context())
        .await
        .expect_err("no grant");
    assert!(
        matches!(
            error.kind(),
            ErrorKind::CapabilityDenied | ErrorKind::ToolFailed
        ),
        "{error}"
    );

    let granted = load(MISBEHAVE, |config| {
        config
            .grants
            .sockets
            .push(address.parse().expect("a host pattern"));
    })
    .await;
    let output = granted
        .call("connect", &arguments, &context())
        .await
        .expect("granted");
    assert_eq!(output.text, format!("connected to {address}"));
}

#[tokio::test]
async fn a_note_that_exists_is_overwritten_only_once_the_user_says_so() {
    let notes = tempfile::tempdir().expect("a temporary directory");
    let toolbox = files_with_notes(notes.path(), true).await;
    let write = |text: &str, answer: Option<serde_json::Value>| {
        let arguments = json!({ "title": "Todo", "text": text }).to_string();
        let context = CallContext {
            input_responses: answer
                .map(|answer| [("overwrite".to_owned(), answer)].into())
                .unwrap_or_default(),
            ..context()
        };
        let toolbox = &toolbox;
        async move { toolbox.call("write_note", &arguments, &context).await }
    };
    let saved = || std::fs::read_to_string(notes.path().join("todo.md")).expect("the note");
    let first = write("milk", None).await.expect("a new note is written");
    assert!(first.input_required.is_none());
    assert_eq!(
        first.structured.expect("structured")["path"],
        "/notes/todo.md"
    );

    let asked = write("eggs", None).await.expect("the tool asks");
    let question = &asked.input_required.expect("it asks first").requests["overwrite"];
    assert_eq!(question.method, "elicitation/create");
    assert!(
        question.params["message"]
            .as_str()
            .is_some_and(|m| m.contains("/notes/todo.md exists already")),
        "{question:?}"
    );
    assert!(
        saved().contains("milk"),
        "nothing written before the answer"
    );

    let declined = write("eggs", Some(json!({"action": "decline"})))
        .await
        .expect("answered");
    assert!(declined.text.starts_with("Not saved"), "{}", declined.text);
    assert!(saved().contains("milk"));

    let yes = json!({"action": "accept", "content": {"overwrite": true}});
    let done = write("eggs", Some(yes)).await.expect("answered");
    assert!(done.input_required.is_none());
    assert!(saved().contains("eggs"), "overwritten once accepted");

    // The notes are resources too (the SDK's `Offers`), read with the component's grants.
    let offers = toolbox.offers();
    assert_eq!(offers.templates[0].uri_template, "note://{title}");
    let read = toolbox
        .read_resource("note://Todo")
        .await
        .expect("the note");
    assert_eq!(read[0].text.as_deref(), Some("# Todo\n\neggs\n"));
    let missing = toolbox.read_resource("note://nothing").await.unwrap_err();
    assert!(missing.to_string().contains("no note titled"), "{missing}");
}
