//! Code mode in the loop, played byte for byte by the scripted model in both wire formats:
//! the model offered one tool that lists the others as typed signatures, a program (the one
//! docs/code-mode.md shows) that lists, reads and sums files and writes a note, its nested
//! calls audited with the program's call as their parent; a program whose write needs
//! approval pausing the run (through JSON) and running again once decided, its read answered
//! from the journal; and the same task without code mode, side by side: model turns and
//! request bytes.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use toolhost::agent::{
    Agent, AgentOptions, Approval, ApprovalMode, ApprovalRules, AuditLog, Conversation, RunEnd,
    RunOptions, ToolExecution,
};
use toolhost::code::Language;
use toolhost_tests::cli::{HostCommand, ManifestFile};
use toolhost_tests::code_mode::{Sales, code_mode, code_mode_in, provider, request_bytes, run};
use toolhost_tests::components::{CALCULATOR, RUNNER_JS, RUNNER_PY};
use toolhost_tests::model::{Format, ScriptedModel, call, calls, text};
use toolhost_tests::{runtime, scripted};

use super::approve_cli::OnTerminal;
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
        did_the_task(&result.executions[0], total);
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

/// Asserts that `execution`, the program of docs/code-mode.md (in either language), listed,
/// read the three files, wrote the note, printed what it read and returned `total`.
fn did_the_task(execution: &ToolExecution, total: u64) {
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
        did_the_task(&result.executions[0], total);
        assert_eq!(model.requests().len(), 2);
    }
}

/// A program that reads a file, then writes a note of what it read (catching a denial).
const READ_THEN_WRITE: &str = r#"
    const text = await tools.read_file({ path: "/data/sales-north.csv" });
    const rows = text.trim().split("\n").length - 1;
    try {
        await tools.write_note({ title: "north", text: `${rows} rows` });
        return `written: ${rows} rows`;
    } catch (error) {
        return `${error.kind}: ${error.message}`;
    }
"#;

/// An agent whose `write_note` calls wait for approval (`approval = "always"`), with the
/// files tool of `sales`, writing its audit log to `audit`.
async fn approving_agent(model: &ScriptedModel, sales: &Sales, audit: &Path) -> Agent {
    let options = AgentOptions {
        approval: ApprovalRules {
            tools: [("write_note".to_owned(), ApprovalMode::Always)].into(),
            ..ApprovalRules::default()
        },
        ..AgentOptions::default()
    };
    let toolbox = sales.toolbox(&runtime()).await;
    Agent::new(provider(model), toolbox, options)
        .with_audit(Arc::new(AuditLog::open(audit).unwrap()))
}

/// Each line of the audit log at `path`: call id, tool, outcome, parent.
fn audited(path: &Path) -> Vec<(String, String, String, Option<String>)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).unwrap();
            let text = |key: &str| line[key].as_str().map(str::to_owned);
            (
                text("call_id").unwrap(),
                text("tool").unwrap(),
                text("outcome").unwrap(),
                text("parent"),
            )
        })
        .collect()
}

fn line(
    id: &str,
    tool: &str,
    outcome: &str,
    parent: Option<&str>,
) -> (String, String, String, Option<String>) {
    (
        id.to_owned(),
        tool.to_owned(),
        outcome.to_owned(),
        parent.map(str::to_owned),
    )
}

/// Runs [`READ_THEN_WRITE`] until it pauses on the write; returns the paused conversation,
/// through JSON (as another process would load it), and the model.
async fn paused_on_the_write(
    format: Format,
    sales: &Sales,
    audit: &Path,
) -> (Conversation, ScriptedModel) {
    let model = program_then(format, READ_THEN_WRITE, "Done.").await;
    let agent = approving_agent(&model, sales, audit).await;
    let options = code_options().await;
    let mut conversation = Conversation::new();
    conversation.push_user("Note how many rows the north file has.");
    let result = agent
        .run(&mut conversation, &options, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(result.end, RunEnd::Paused, "{format:?}");
    let pending: Vec<_> = result
        .pending
        .iter()
        .map(|p| (p.call_id.as_str(), p.tool.as_str(), p.parent.as_deref()))
        .collect();
    assert_eq!(pending, [("p1.1", "write_note", Some("p1"))]);
    assert_eq!(
        result.pending[0].arguments_json(),
        Some(json!({"title": "north", "text": "40 rows"}))
    );
    assert_eq!(
        std::fs::read_dir(sales.notes.path()).unwrap().count(),
        0,
        "nothing written yet"
    );
    assert_eq!(model.requests().len(), 1, "the model waits too");
    // The read ran, once; the write waits, unrecorded; the program has not ended.
    assert_eq!(
        audited(audit),
        [line("p1.0", "read_file", "ok", Some("p1"))]
    );
    let saved = serde_json::to_string(&conversation).unwrap();
    drop(conversation);
    (Conversation::from_json(&saved).unwrap(), model)
}

async fn code_options() -> RunOptions {
    RunOptions {
        code_mode: Some(code_mode(&runtime()).await),
        ..RunOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_whose_write_needs_approval_pauses_and_runs_again_once_approved() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let sales = Sales::new();
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let (mut conversation, model) = paused_on_the_write(format, &sales, &audit).await;
        // Were the read run again, the program would now count 41 rows.
        let north = sales.data.path().join("sales-north.csv");
        let mut csv = std::fs::read_to_string(&north).unwrap();
        csv.push_str("widget-north-40,1\n");
        std::fs::write(&north, csv).unwrap();

        conversation.approve("p1.1").unwrap();
        let agent = approving_agent(&model, &sales, &audit).await;
        let result = agent
            .resume(&mut conversation, &code_options().await, &mut |_| {})
            .await
            .unwrap();
        assert_eq!(
            (result.text.as_str(), result.end),
            ("Done.", RunEnd::Answered)
        );
        let execution = &result.executions[0];
        let report: Value = serde_json::from_str(&execution.output).unwrap();
        assert_eq!(report["result"], "written: 40 rows", "{format:?}");
        let nested: Vec<(&str, &str, Approval)> = execution
            .nested
            .iter()
            .map(|e| (e.call_id.as_str(), e.name.as_str(), e.approval))
            .collect();
        assert_eq!(
            nested,
            [
                ("p1.0", "read_file", Approval::NotRequired),
                ("p1.1", "write_note", Approval::Approved),
            ]
        );
        // The note, once; each call in the audit log once, the program's last.
        let notes: Vec<_> = std::fs::read_dir(sales.notes.path()).unwrap().collect();
        assert_eq!(notes.len(), 1);
        let note = std::fs::read_to_string(sales.notes.path().join("north.md")).unwrap();
        assert_eq!(note, "# north\n\n40 rows\n");
        assert_eq!(
            audited(&audit),
            [
                line("p1.0", "read_file", "ok", Some("p1")),
                line("p1.1", "write_note", "ok", Some("p1")),
                line("p1", "run_code", "ok", None),
            ]
        );
        let bodies = model.bodies();
        assert!(
            bodies[1].to_string().contains("written: 40 rows"),
            "{format:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_write_is_a_denial_the_program_catches_with_the_reason() {
    for format in [Format::OpenAi, Format::Anthropic] {
        let sales = Sales::new();
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let (mut conversation, model) = paused_on_the_write(format, &sales, &audit).await;
        conversation
            .reject("p1.1", "not in the shared notes")
            .unwrap();
        let agent = approving_agent(&model, &sales, &audit).await;
        let result = agent
            .resume(&mut conversation, &code_options().await, &mut |_| {})
            .await
            .unwrap();
        assert_eq!(result.text, "Done.");
        let execution = &result.executions[0];
        let report: Value = serde_json::from_str(&execution.output).unwrap();
        let caught = report["result"].as_str().unwrap();
        assert_eq!(
            caught,
            "denied: This call was not approved, so it did not run. The reason given: not in \
             the shared notes"
        );
        // The model read what the program returned.
        let sent = model.bodies()[1].to_string();
        assert!(sent.contains("not in the shared notes"), "{sent}");
        assert_eq!(execution.nested[1].approval, Approval::Rejected);
        assert_eq!(std::fs::read_dir(sales.notes.path()).unwrap().count(), 0);
        assert_eq!(
            audited(&audit),
            [
                line("p1.0", "read_file", "ok", Some("p1")),
                line("p1.1", "write_note", "rejected", Some("p1")),
                line("p1", "run_code", "ok", None),
            ]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_approved_for_the_run_does_not_pause_the_program_again() {
    let program = r#"
        const written = [];
        for (const region of ["north", "south", "east"]) {
            await tools.write_note({ title: region, text: `sales of the ${region}` });
            written.push(region);
        }
        return written;
    "#;
    for format in [Format::OpenAi, Format::Anthropic] {
        let sales = Sales::new();
        let dir = tempfile::tempdir().unwrap();
        let audit = dir.path().join("audit.jsonl");
        let model = program_then(format, program, "Three notes.").await;
        let agent = approving_agent(&model, &sales, &audit).await;
        let options = code_options().await;
        let mut conversation = Conversation::new();
        conversation.push_user("Write a note per region.");
        let result = agent
            .run(&mut conversation, &options, &mut |_| {})
            .await
            .unwrap();
        assert_eq!(result.end, RunEnd::Paused);
        let pending: Vec<&str> = result.pending.iter().map(|p| p.call_id.as_str()).collect();
        assert_eq!(pending, ["p1.0"]);
        conversation.approve_for_run("p1.0").unwrap();
        let result = agent
            .resume(&mut conversation, &options, &mut |_| {})
            .await
            .unwrap();
        assert_eq!(
            (result.text.as_str(), result.end),
            ("Three notes.", RunEnd::Answered)
        );
        let report: Value = serde_json::from_str(&result.executions[0].output).unwrap();
        assert_eq!(report["result"], json!(["north", "south", "east"]));
        let approvals: Vec<Approval> = result.executions[0]
            .nested
            .iter()
            .map(|e| e.approval)
            .collect();
        assert_eq!(approvals, [Approval::ApprovedForRun; 3]);
        assert_eq!(std::fs::read_dir(sales.notes.path()).unwrap().count(), 3);
        let writes = audited(&audit)
            .into_iter()
            .filter(|(_, tool, _, _)| tool == "write_note")
            .count();
        assert_eq!(writes, 3, "each note written once");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_pauses_once_for_each_call_approved_one_at_a_time() {
    let program = r#"
        await tools.write_note({ title: "first", text: "one" });
        await tools.write_note({ title: "second", text: "two" });
        return "both";
    "#;
    let sales = Sales::new();
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let model = program_then(Format::OpenAi, program, "Two notes.").await;
    let agent = approving_agent(&model, &sales, &audit).await;
    let options = code_options().await;
    let mut conversation = Conversation::new();
    conversation.push_user("Write two notes.");
    let mut result = agent
        .run(&mut conversation, &options, &mut |_| {})
        .await
        .unwrap();
    let mut asked = Vec::new();
    while result.end == RunEnd::Paused {
        let id = result.pending[0].call_id.clone();
        // Each pause goes through JSON, as a saved conversation would.
        let saved = serde_json::to_string(&conversation).unwrap();
        conversation = Conversation::from_json(&saved).unwrap();
        conversation.approve(&id).unwrap();
        asked.push(id);
        result = agent
            .resume(&mut conversation, &options, &mut |_| {})
            .await
            .unwrap();
    }
    assert_eq!(asked, ["p1.0", "p1.1"]);
    assert_eq!(result.text, "Two notes.");
    let approvals: Vec<Approval> = (result.executions[0].nested.iter())
        .map(|e| e.approval)
        .collect();
    assert_eq!(approvals, [Approval::Approved, Approval::Approved]);
    assert_eq!(std::fs::read_dir(sales.notes.path()).unwrap().count(), 2);
    let ids: Vec<String> = audited(&audit).into_iter().map(|l| l.0).collect();
    assert_eq!(ids, ["p1.0", "p1.1", "p1"], "the first note written once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_started_with_the_one_that_waits_finish_and_are_not_run_again() {
    // The write waits; the reads started with it finish before the run pauses, and are
    // answered from the journal when the program runs again.
    let program = r#"
        const [south, written, east] = await Promise.all([
            tools.read_file({ path: "/data/sales-south.csv" }),
            tools.write_note({ title: "both", text: "south and east" }),
            tools.read_file({ path: "/data/sales-east.csv" }),
        ]);
        return [south.length, written, east.length];
    "#;
    let sales = Sales::new();
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let model = program_then(Format::Anthropic, program, "Both read.").await;
    let agent = approving_agent(&model, &sales, &audit).await;
    let options = code_options().await;
    let mut conversation = Conversation::new();
    conversation.push_user("Read both and note it.");
    let result = agent
        .run(&mut conversation, &options, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(result.end, RunEnd::Paused);
    assert_eq!(result.pending[0].call_id, "p1.1");
    let mut before: Vec<_> = audited(&audit).into_iter().map(|l| l.0).collect();
    before.sort();
    assert_eq!(
        before,
        ["p1.0", "p1.2"],
        "both reads finished before the pause"
    );
    conversation.approve("p1.1").unwrap();
    let result = agent
        .resume(&mut conversation, &options, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(result.end, RunEnd::Answered);
    let report: Value = serde_json::from_str(&result.executions[0].output).unwrap();
    let lengths = &report["result"];
    assert!(
        lengths[0].as_u64().unwrap() > 0 && lengths[2].as_u64().unwrap() > 0,
        "{report}"
    );
    let ids: Vec<String> = audited(&audit).into_iter().map(|l| l.0).collect();
    assert_eq!(
        ids.len(),
        4,
        "each read once, the write once, the program: {ids:?}"
    );
    assert_eq!(&ids[2..], ["p1.1", "p1"]);
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

/// `host run --code-mode` asks on the terminal about a program's call that needs approval,
/// saying which program made it, then runs the program again: the call before it is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_run_asks_on_the_terminal_about_a_programs_call_and_runs_it_again() {
    let program = "const a = await tools.square_root({x: 16});\n\
                   return await tools.add({a, b: 9});";
    let model = program_then(Format::OpenAi, program, "It is 13.").await;
    let manifest = ManifestFile::in_dir(|dir| {
        format!(
            "[components.calculator]\npath = {CALCULATOR:?}\n\n[tools.add]\napproval = \"always\"\n\n\
             [audit]\npath = {:?}\n\n[code_mode]\nrunner = {:?}\n",
            dir.join("audit.jsonl"),
            scripted(RUNNER_JS)
        )
    });
    let command = HostCommand::new("run")
        .manifest(&manifest)
        .model(&model)
        .args(["--code-mode", "What is √16 + 9?"])
        .into_command();
    let screen = tokio::task::spawn_blocking(move || {
        let mut terminal = OnTerminal::spawn(command);
        terminal.wait_for("run it?", 1);
        terminal.type_line("y");
        let (out, screen) = terminal.finish();
        assert!(out.status.success(), "{screen}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "It is 13.\n");
        screen
    })
    .await
    .unwrap();
    assert!(
        screen.contains(r#"? add wants to run with {"a":4,"b":9}"#),
        "{screen}"
    );
    assert!(
        screen.contains("called by the program of call p1, which runs again once decided"),
        "{screen}"
    );
    assert_eq!(screen.matches("run it?").count(), 1, "{screen}");
    let audited: Vec<(String, String)> = audited(&manifest.dir().join("audit.jsonl"))
        .into_iter()
        .map(|(id, tool, _, _)| (id, tool))
        .collect();
    let expected = [("p1.0", "square_root"), ("p1.1", "add"), ("p1", "run_code")];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(id, tool)| ((*id).to_owned(), (*tool).to_owned()))
        .collect();
    assert_eq!(audited, expected, "the square root ran once");
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
