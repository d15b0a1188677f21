//! Directories per caller: one notes tool (the example `files` component) granted
//! `NOTES/{sub}` keeps each verified caller's notes apart, and a caller whose subject cannot
//! name a directory gets none.

use std::path::Path;
use std::sync::Arc;

use toolhost::sandbox::DirGrant;
use toolhost::{CallContext, CallError, Caller, Host, Toolbox};
use toolhost_tests::cli::ManifestFile;
use toolhost_tests::components::FILES;
use toolhost_tests::load;

/// The files component, its `/notes` (writable) and `/data` (read-only) both the caller's own
/// directory under `parent`.
async fn notes_tool(parent: &Path) -> Toolbox {
    load(FILES, |config| {
        for (guest, write) in [("/notes", true), ("/data", false)] {
            config.grants.dirs.push(DirGrant {
                host: parent.join("{sub}"),
                guest: guest.into(),
                write,
            });
        }
    })
    .await
}

fn as_caller(subject: &str) -> CallContext {
    CallContext {
        caller: Some(Arc::new(Caller {
            subject: subject.to_owned(),
            issuer: "https://issuer.test".to_owned(),
            ..Caller::default()
        })),
        ..CallContext::default()
    }
}

#[tokio::test]
async fn two_callers_of_one_notes_tool_never_see_each_others_notes() {
    let parent = tempfile::tempdir().unwrap();
    let toolbox = notes_tool(parent.path()).await;
    let (alice, bob) = (as_caller("alice"), as_caller("bob"));
    let note = r#"{"title": "groceries", "text": "milk, eggs"}"#;
    toolbox.call("write_note", note, &alice).await.unwrap();

    let listed = |output: toolhost::ToolOutput| output.text;
    let alices = listed(
        toolbox
            .call("list_files", r#"{"path": "/data"}"#, &alice)
            .await
            .unwrap(),
    );
    assert!(alices.contains("groceries.md"), "{alices}");
    let bobs = listed(
        toolbox
            .call("list_files", r#"{"path": "/data"}"#, &bob)
            .await
            .unwrap(),
    );
    assert_eq!(bobs, "[]");
    let read = r#"{"path": "/data/groceries.md"}"#;
    let error = toolbox.call("read_file", read, &bob).await.unwrap_err();
    assert!(matches!(error, CallError::ToolFailed { .. }), "{error}");
    let text = toolbox.call("read_file", read, &alice).await.unwrap().text;
    assert!(text.contains("milk, eggs"), "{text}");

    // On the host: one directory each, named by the subject.
    let alice_dir = parent.path().join("alice");
    assert!(alice_dir.join("groceries.md").is_file());
    assert_eq!(
        std::fs::read_dir(parent.path().join("bob"))
            .unwrap()
            .count(),
        0
    );
}

#[tokio::test]
async fn a_subject_that_cannot_name_a_directory_is_refused_and_makes_nothing() {
    let parent = tempfile::tempdir().unwrap();
    let inside = parent.path().join("shared");
    std::fs::create_dir(&inside).unwrap();
    let toolbox = notes_tool(&inside).await;
    let long = "x".repeat(toolhost::sandbox::MAX_NAME + 1);
    for hostile in [
        "..",
        "../shared",
        "alice/../bob",
        "a/b",
        "",
        "nul\0byte",
        long.as_str(),
    ] {
        let error = toolbox
            .call("list_files", r#"{"path": "/data"}"#, &as_caller(hostile))
            .await
            .unwrap_err();
        match &error {
            CallError::CapabilityDenied {
                capability, grant, ..
            } => {
                assert!(capability.contains("/notes") || capability.contains("/data"));
                assert!(grant.contains("cannot name a directory"), "{grant}");
            }
            other => panic!("{hostile:?}: expected a denied capability, got {other:?}"),
        }
        // What the model is told names no host path.
        assert!(!error.model_message().contains(&*inside.to_string_lossy()));
    }
    assert_eq!(std::fs::read_dir(&inside).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 1);
}

#[tokio::test]
async fn a_call_without_a_verified_caller_is_refused_naming_the_grant() {
    let parent = tempfile::tempdir().unwrap();
    let toolbox = notes_tool(parent.path()).await;
    let error = toolbox
        .call(
            "list_files",
            r#"{"path": "/data"}"#,
            &CallContext::default(),
        )
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("{sub}") && message.contains("no verified caller"),
        "{message}"
    );
}

/// The manifest docs/manifest.md shows: the files component with a directory per caller and
/// access rules; `tools` names the tools of the `notes` scope.
fn manifest_with(tools: &str) -> ManifestFile {
    ManifestFile::in_dir(|dir| {
        std::fs::create_dir(dir.join("notes")).unwrap();
        format!(
            r#"
[components.files]
path = {FILES:?}
grants.dirs = [{{ host = "notes/{{sub}}", guest = "/notes", write = true }}]

[[mcp.access]]
scopes = ["notes"]
tools = {tools}
resources = ["note://{{title}}"]

[[mcp.access]]
claims = {{ groups = "admins" }}
tools = ["*"]
"#
        )
    })
}

#[tokio::test]
async fn access_rules_load_when_every_name_is_a_tool_and_are_refused_naming_the_others() {
    let good = manifest_with(r#"["write_note", "list_files"]"#);
    let host = Host::load(good.path()).await.unwrap();
    assert_eq!(host.mcp_config().access.len(), 2);

    let bad = manifest_with(r#"["write_note", "delete_everything"]"#);
    let error = Host::load(bad.path()).await.err().expect("an unknown tool");
    let message = toolhost_tests::error::chain(&error);
    assert!(
        message.contains("[[mcp.access]] names tools that no loaded tool is: delete_everything"),
        "{message}"
    );
    assert!(
        message.contains("write_note"),
        "the tools there are: {message}"
    );
}
