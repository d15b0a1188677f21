//! The README's embedding example is taken from `host/examples/embed.rs`, line for line; this
//! runs the example, as built by `cargo test`, against the scripted model.

use std::process::Command;

use toolhost_tests::components::CALCULATOR;
use toolhost_tests::model::{Format, ScriptedModel, call, calls, text};
use toolhost_tests::{repo_root, require_guests};

#[test]
fn the_readme_shows_the_example_as_it_is() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let example = std::fs::read_to_string(repo_root().join("host/examples/embed.rs")).unwrap();
    let start = readme
        .find("(`cargo run -p toolhost --example embed`):\n\n```rust\n")
        .expect("README.md shows an excerpt of host/examples/embed.rs in a ```rust block");
    let excerpt = &readme[start..];
    let excerpt = &excerpt[excerpt.find("```rust\n").unwrap() + 8..];
    let excerpt = &excerpt[..excerpt.find("```").unwrap()];
    // The README's lines are shorter than rustfmt's: compared without white space, the
    // separators rustfmt adds (`,` `;`) and a trailing comment that names what is elided.
    let bare = |text: &str| -> String {
        (text.chars())
            .filter(|c| !c.is_whitespace() && *c != ',' && *c != ';')
            .collect()
    };
    let example = bare(&example);
    for line in excerpt.lines() {
        let line = line.split(" // options:").next().unwrap();
        assert!(
            example.contains(&bare(line)),
            "README.md's embedding example has a line that host/examples/embed.rs does not: {line}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_example_runs() {
    require_guests();
    let model = ScriptedModel::start(
        Format::OpenAi,
        vec![
            calls(vec![call("c1", "square_root", r#"{"x": 475695037565}"#)]),
            text("The result is 689706.4865324959."),
        ],
    )
    .await;
    // The example reads example-tools/toolhost.toml from where it runs: give it one whose
    // model is the scripted one.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("example-tools")).unwrap();
    std::fs::write(
        dir.path().join("example-tools/toolhost.toml"),
        format!(
            "[components.calculator]\npath = {CALCULATOR:?}\n\n[model]\nprovider = \"openai\"\n\
             base_url = {:?}\n",
            model.base_url()
        ),
    )
    .unwrap();
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples/embed");
    assert!(
        example.exists(),
        "{} is missing; `cargo test --workspace` builds it",
        example.display()
    );
    let mut command = Command::new(&example);
    command.current_dir(dir.path()).env_remove("OPENAI_API_KEY");
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout,
        "square_root: 689706.4865324959\n\
         The result is 689706.4865324959.\n\
         square_root {\"x\": 475695037565} -> 689706.4865324959\n"
    );
    let tools = &model.bodies()[0]["tools"];
    assert_eq!(tools.as_array().unwrap().len(), 3, "{tools}");
}
