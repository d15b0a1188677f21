//! Code mode in the loop, played byte for byte by the scripted model in both wire formats:
//! the model offered one tool that lists the others as typed signatures, a program (the one
//! docs/code-mode.md shows) that lists, reads and sums files and writes a note, its nested
//! calls approved and audited with the program's call as their parent; and the same task
//! without code mode, side by side: model turns and request bytes.

use serde_json::{Value, json};
use toolhost::agent::{AgentOptions, ApprovalMode, ApprovalRules, RunOptions};
use toolhost::code::Language;
use toolhost_tests::cli::{HostCommand, ManifestFile};
use toolhost_tests::code_mode::{Sales, code_mode, code_mode_in, request_bytes, run};
use toolhost_tests::components::{RUNNER_JS, RUNNER_PY};
use toolhost_tests::model::{Format, ScriptedModel, call, calls, text};
use toolhost_tests::{runtime, scripted};

use super::sent;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_does_in_two_turns_what_takes_four_step_by_step() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let sales = Sales::new();
        let total = sales.total;
        let toolbox = sales.toolbox(&runtime()).await;
        let (note, expected_note) = sales.note();

        let plain = ScriptedModel::start(format, sales.step_by_step()).await;
        let options = RunOptions::default();
        let result = run(
            &plain,
            toolbox.clone(),
            AgentOptions::default(),
            &options,
            None,
        )
        .await;
        assert_eq!(result.text, sales.answer());
        assert_eq!(std::fs::read_to_string(&note).unwrap(), expected_note);
        std::fs::remove_file(&note).unwrap();

        let coded = ScriptedModel::start(format, sales.as_program()).await;
        let options = RunOptions {
            code_mode: Some(code_mode(&runtime()).await),
            ..RunOptions::default()
        };
        let result = run(&coded, toolbox, AgentOptions::default(), &options, None).await;
        assert_eq!(result.text, sales.answer());
        assert_eq!(std::fs::read_to_string(&note).unwrap(), expected_note);

        // The model was offered one tool, which lists the others as typed signatures.
        let bodies = coded.bodies();
        assert_eq!(sent::tools(format, &bodies[0]), ["run_code"]);
        let offered = bodies[0].to_string();
        assert!(
            offered.contains("list_files(args: { path: string"),
            "{offered}"
        );
        assert!(
            offered.contains("write_note(args: { text: string"),
            "{offered}"
        );
        // Its one result holds the program's value, what it printed, and each call.
        let execution = &result.executions[0];
        let report: Value = serde_json::from_str(&execution.output).unwrap();
        assert_eq!(report["result"], json!({"files": 3, "total": total}));
        assert_eq!(report["printed"], "read 3 files\n");
        let tools: Vec<&str> = execution.nested.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            tools,
            [
                "list_files",
                "read_file",
                "read_file",
                "read_file",
                "write_note"
            ]
        );
        assert_eq!(execution.nested[4].call_id, "p1.4");
        assert!(
            bodies[1]
                .to_string()
                .contains(&format!(r#"\"total\":{total}"#))
        );

        // Fewer turns, measured side by side.
        let (plain_turns, coded_turns) = (plain.requests().len(), coded.requests().len());
        assert_eq!((plain_turns, coded_turns), (4, 2));
        println!(
            "{format:?}: step by step {plain_turns} turns, {} request bytes; one program \
             {coded_turns} turns, {} request bytes",
            request_bytes(&plain),
            request_bytes(&coded)
        );
    }
}

/// The same task as the Python program of docs/code-mode.md, with the Python runner: the
/// model is told to write Python, and the program's calls, output and result are those of
/// the JavaScript one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_program_of_the_docs_does_the_task_in_two_turns() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let sales = Sales::new();
        let total = sales.total;
        let toolbox = sales.toolbox(&runtime()).await;
        let (note, expected_note) = sales.note();
        let model = ScriptedModel::start(format, sales.as_program_in(Language::Python)).await;
        let options = RunOptions {
            code_mode: Some(code_mode_in(&runtime(), Language::Python).await),
            ..RunOptions::default()
        };
        let result = run(&model, toolbox, AgentOptions::default(), &options, None).await;
        assert_eq!(result.text, sales.answer());
        assert_eq!(std::fs::read_to_string(&note).unwrap(), expected_note);

        let bodies = model.bodies();
        assert_eq!(sent::tools(format, &bodies[0]), ["run_code"]);
        let offered = bodies[0].to_string();
        assert!(offered.contains("Runs a Python program"), "{offered}");
        assert!(offered.contains("async def list_files(*,"), "{offered}");
        assert!(offered.contains("path: str,"), "{offered}");
        let execution = &result.executions[0];
        let report: Value = serde_json::from_str(&execution.output).unwrap();
        assert_eq!(report["result"], json!({"files": 3, "total": total}));
        assert_eq!(report["printed"], "read 3 files\n");
        let tools: Vec<&str> = execution.nested.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            tools,
            [
                "list_files",
                "read_file",
                "read_file",
                "read_file",
                "write_note"
            ]
        );
        assert_eq!(execution.nested[4].call_id, "p1.4");
        assert_eq!(model.requests().len(), 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_needs_approval_is_denied_inside_a_program_and_every_call_is_audited() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let sales = Sales::new();
        let toolbox = sales.toolbox(&runtime()).await;
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let program = r#"
            const text = await tools.read_file({ path: "/data/sales-north.csv" });
            try {
                await tools.write_note({ title: "north", text });
                return "written";
            } catch (error) {
                return `${error.kind}: ${error.message}`;
            }
        "#;
        let model = program_then(format, program, "It needs your approval.").await;
        let agent_options = AgentOptions {
            approval: ApprovalRules {
                tools: [("write_note".to_owned(), ApprovalMode::Always)].into(),
                ..ApprovalRules::default()
            },
            ..AgentOptions::default()
        };
        let options = RunOptions {
            code_mode: Some(code_mode(&runtime()).await),
            ..RunOptions::default()
        };
        let result = run(&model, toolbox, agent_options, &options, Some(&audit)).await;
        assert_eq!(result.text, "It needs your approval.");
        let report: Value = serde_json::from_str(&result.executions[0].output).unwrap();
        let said = report["result"].as_str().unwrap();
        assert!(
            said.starts_with("denied: `write_note` needs a person's approval"),
            "{said}"
        );
        assert_eq!(
            std::fs::read_dir(sales.notes.path()).unwrap().count(),
            0,
            "nothing written"
        );

        let lines: Vec<Value> = std::fs::read_to_string(&audit)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let summary: Vec<(&str, &str, &str, Option<&str>)> = lines
            .iter()
            .map(|l| {
                (
                    l["call_id"].as_str().unwrap(),
                    l["tool"].as_str().unwrap(),
                    l["outcome"].as_str().unwrap(),
                    l["parent"].as_str(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("p1.0", "read_file", "ok", Some("p1")),
                ("p1.1", "write_note", "rejected", Some("p1")),
                ("p1", "run_code", "ok", None),
            ]
        );
        assert_eq!(lines[1]["approval"], "rejected");
    }
}

/// A Python program that catches the denial of a call needing approval and tries again
/// forever is ended at the nested-call limit; nothing is written, the run goes on, and the
/// model is told why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_program_retrying_a_denied_call_forever_ends_at_the_call_limit() {
    let format = Format::OpenAi;
    let sales = Sales::new();
    let toolbox = sales.toolbox(&runtime()).await;
    let program = r#"
denied = 0
while True:
    try:
        await tools.write_note(title="again", text="and again")
    except ToolError as error:
        if error.kind == "denied":
            denied += 1
"#;
    let model = program_then(format, program, "I could not write it.").await;
    let agent_options = AgentOptions {
        approval: ApprovalRules {
            tools: [("write_note".to_owned(), ApprovalMode::Always)].into(),
            ..ApprovalRules::default()
        },
        ..AgentOptions::default()
    };
    let options = RunOptions {
        code_mode: Some(code_mode_in(&runtime(), Language::Python).await),
        ..RunOptions::default()
    };
    let result = run(&model, toolbox, agent_options, &options, None).await;
    assert_eq!(result.text, "I could not write it.");
    assert_eq!(
        std::fs::read_dir(sales.notes.path()).unwrap().count(),
        0,
        "nothing written"
    );
    let execution = &result.executions[0];
    let report: Value = serde_json::from_str(&execution.output).unwrap();
    let error = report["error"].as_str().unwrap();
    assert!(error.contains("more than 100 tool calls"), "{error}");
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 100);
    assert!(
        calls.iter().all(|call| call["error"] == "denied"),
        "{report}"
    );
    // The model was told in the next request.
    assert!(
        model.bodies()[1]
            .to_string()
            .contains("more than 100 tool calls")
    );
}

/// `host run` in code mode, turned on by `flag` (else by the manifest's `[code_mode]`),
/// against a model that writes one program of the calculator's calls.
async fn host_run_in_code_mode(format: Format, flag: bool) -> toolhost_tests::cli::HostOutput {
    let program = "const roots = await Promise.all([16, 81].map((x) => tools.square_root({x})));\n\
                   console.log('roots', roots);\n\
                   return await tools.add({a: roots[0], b: roots[1]});";
    let model = program_then(format, program, "It is 13.").await;
    let enabled = if flag { "" } else { "enabled = true\n" };
    let manifest = ManifestFile::calculator(&format!(
        "[code_mode]\n{enabled}runner = {:?}\nmax_calls = 5\n",
        scripted(RUNNER_JS)
    ));
    let mut command = HostCommand::new("run").manifest(&manifest).model(&model);
    if flag {
        command = command.arg("--code-mode");
    }
    let out = command.args(["--json", "What is √16 + √81?"]).run().await;
    let bodies = model.bodies();
    assert_eq!(sent::tools(format, &bodies[0]), ["run_code"]);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_run_offers_run_code_with_the_flag_or_the_manifest_key() {
    for (format, flag) in [(Format::OpenAi, true), (Format::Anthropic, false)] {
        let out = host_run_in_code_mode(format, flag).await;
        out.assert_success();
        let result = &out.json()["result"];
        assert_eq!(result["text"], "It is 13.");
        let execution = &result["executions"][0];
        assert_eq!(execution["name"], "run_code");
        let report: Value = serde_json::from_str(execution["output"].as_str().unwrap()).unwrap();
        assert_eq!(report["result"], json!(13));
        assert_eq!(report["printed"], "roots [4,9]\n");
        let nested: Vec<&str> = execution["nested"]
            .as_array()
            .unwrap()
            .iter()
            .map(|call| call["name"].as_str().unwrap())
            .collect();
        assert_eq!(nested, ["square_root", "square_root", "add"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_run_names_the_missing_runner_and_the_fix() {
    let manifest = ManifestFile::calculator("[code_mode]\nenabled = true\n");
    let out = HostCommand::new("run")
        .manifest(&manifest)
        .args([
            "--model",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "hi",
        ])
        .run()
        .await;
    assert!(!out.status.success());
    let stderr = &out.stderr;
    assert!(
        stderr.contains("code mode cannot load its runner"),
        "{stderr}"
    );
    assert!(stderr.contains("dist/runner-js.wasm"), "{stderr}");
    assert!(stderr.contains("just tools"), "{stderr}");
}

/// `host chat --code-mode` offers the model `run_code` alone, and runs its program.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_chat_offers_run_code_with_the_flag() {
    let program = "return await tools.add({a: 2, b: 3});";
    let model = program_then(Format::OpenAi, program, "It is 5.").await;
    let manifest = ManifestFile::calculator(&format!(
        "[code_mode]\nrunner = {:?}\n",
        scripted(RUNNER_JS)
    ));
    let out = HostCommand::new("chat")
        .manifest(&manifest)
        .model(&model)
        .arg("--code-mode")
        .stdin("What is 2 + 3?\n/exit\n")
        .run()
        .await;
    out.assert_success();
    assert_eq!(out.stdout, "It is 5.\n");
    let bodies = model.bodies();
    assert_eq!(sent::tools(Format::OpenAi, &bodies[0]), ["run_code"]);
    let answered = bodies[1].to_string();
    assert!(answered.contains(r#"\"result\":5"#), "{answered}");
}

/// A scripted model (in `format`) that answers the first turn with one `run_code` call of
/// `program`, and the next with `answer`.
async fn program_then(format: Format, program: &str, answer: &str) -> ScriptedModel {
    ScriptedModel::start(
        format,
        vec![
            calls(vec![call(
                "p1",
                "run_code",
                &json!({ "code": program }).to_string(),
            )]),
            text(answer),
        ],
    )
    .await
}

/// `host run` with the Python runner named by the manifest: the model is told to write
/// Python, and its program runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_run_with_the_python_runner_runs_a_python_program() {
    let program = "roots = await asyncio.gather(tools.square_root(x=16), tools.square_root(x=81))\n\
                   print('roots', roots)\n\
                   return await tools.add(a=roots[0], b=roots[1])";
    let model = program_then(Format::Anthropic, program, "It is 13.").await;
    let manifest = ManifestFile::calculator(&format!(
        "[code_mode]\nenabled = true\nrunner = {:?}\n",
        scripted(RUNNER_PY)
    ));
    let out = HostCommand::new("run")
        .manifest(&manifest)
        .model(&model)
        .args(["--json", "What is √16 + √81?"])
        .run()
        .await;
    out.assert_success();
    let bodies = model.bodies();
    assert_eq!(sent::tools(Format::Anthropic, &bodies[0]), ["run_code"]);
    let offered = bodies[0].to_string();
    assert!(offered.contains("Runs a Python program"), "{offered}");
    assert!(
        offered.contains("the body of an async Python function"),
        "{offered}"
    );
    let execution = &out.json()["result"]["executions"][0];
    let report: Value = serde_json::from_str(execution["output"].as_str().unwrap()).unwrap();
    assert_eq!(report["result"], json!(13.0));
    assert_eq!(report["printed"], "roots [4.0, 9.0]\n");
}
