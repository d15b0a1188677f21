//! Code mode's multi-step task, shared by its tests (`tests/tool_loop/code_mode.rs`) and its
//! bench section: CSV files of sales in a data directory, and the task (list the files, read
//! each, add up a column, write a note with the total) scripted two ways: step by step, one
//! model turn per step, and as the one program docs/code-mode.md shows.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::OnceCell;
use toolhost::agent::{Agent, AgentOptions, AuditLog, Conversation, RunOptions, RunResult};
use toolhost::code::{CodeMode, CodeModeConfig, Language};
use toolhost::llm::{AnthropicProvider, HttpOptions, OpenAiProvider, Provider};
use toolhost::sandbox::DirGrant;
use toolhost::{ComponentConfig, Runtime, Toolbox};

use crate::components::{FILES, RUNNER_JS, RUNNER_PY};
use crate::model::{Format, ScriptedModel, Turn, call, calls, text};
use crate::scripted;

/// What the user asks.
pub const TASK: &str = "Add up the amounts of the CSV files in /data and save the total in a note.";

/// The example program of docs/code-mode.md: its first `javascript` block.
pub fn example_program() -> String {
    example_program_in(Language::JavaScript)
}

/// The example program of docs/code-mode.md in `language`: its first block of that language
/// (`javascript`, `python`).
pub fn example_program_in(language: Language) -> String {
    let page = include_str!("../../docs/code-mode.md");
    let fence = format!("```{}\n", language.as_str());
    let start = page.find(&fence).expect("the page shows a program") + fence.len();
    let length = page[start..].find("```").expect("the block ends");
    page[start..start + length].to_owned()
}

/// Code mode with the JavaScript runner, loaded once per process.
pub async fn code_mode(runtime: &Runtime) -> Arc<CodeMode> {
    code_mode_in(runtime, Language::JavaScript).await
}

/// Code mode with the runner of `language`, loaded once per process.
pub async fn code_mode_in(runtime: &Runtime, language: Language) -> Arc<CodeMode> {
    static JAVASCRIPT: OnceCell<Arc<CodeMode>> = OnceCell::const_new();
    static PYTHON: OnceCell<Arc<CodeMode>> = OnceCell::const_new();
    let (cell, runner) = match language {
        Language::JavaScript => (&JAVASCRIPT, RUNNER_JS),
        Language::Python => (&PYTHON, RUNNER_PY),
    };
    cell.get_or_init(|| async {
        let config = CodeModeConfig::new(scripted(runner));
        let code = CodeMode::load(runtime, config)
            .await
            .expect("the runner loads");
        assert_eq!(
            code.language(),
            language,
            "the runner declares its language"
        );
        Arc::new(code)
    })
    .await
    .clone()
}

/// The task's directories: sales files in `data`, notes written to `notes`.
pub struct Sales {
    /// Three CSV files of 40 rows (`item,amount`) and a text file.
    pub data: tempfile::TempDir,
    /// Empty, writable.
    pub notes: tempfile::TempDir,
    /// The sum of every amount.
    pub total: u64,
}

impl Sales {
    /// Fresh directories.
    pub fn new() -> Self {
        let data = tempfile::tempdir().expect("a temporary directory");
        let mut total = 0;
        for (region, base) in [("north", 3), ("south", 5), ("east", 7)] {
            let mut csv = String::from("item,amount\n");
            for row in 0..40u64 {
                let amount = base * (row + 1);
                total += amount;
                csv.push_str(&format!("widget-{region}-{row:02},{amount}\n"));
            }
            std::fs::write(data.path().join(format!("sales-{region}.csv")), csv).expect("written");
        }
        std::fs::write(data.path().join("readme.txt"), "not a table").expect("written");
        let notes = tempfile::tempdir().expect("a temporary directory");
        Self { data, notes, total }
    }

    /// The files tool, granted the data (read-only) and the notes (read-write).
    pub async fn toolbox(&self, runtime: &Runtime) -> Arc<Toolbox> {
        let mut config = ComponentConfig::new(FILES);
        config.grants.dirs = vec![
            DirGrant {
                host: self.data.path().to_owned(),
                guest: "/data".to_owned(),
                write: false,
            },
            DirGrant {
                host: self.notes.path().to_owned(),
                guest: "/notes".to_owned(),
                write: true,
            },
        ];
        Arc::new(
            Toolbox::builder(runtime)
                .component(config)
                .build()
                .await
                .expect("the files tool loads"),
        )
    }

    /// The note the task writes, and what it should say.
    pub fn note(&self) -> (std::path::PathBuf, String) {
        (
            self.notes.path().join("sales-total.md"),
            format!("# sales total\n\nThe total of 3 files is {}.\n", self.total),
        )
    }

    /// The answer both scripts end with.
    pub fn answer(&self) -> String {
        format!("The total is {}.", self.total)
    }

    /// The task step by step: list, read every file (one turn, in parallel), write, answer.
    pub fn step_by_step(&self) -> Vec<Turn> {
        let read = |id: &str, region: &str| {
            let path = format!("/data/sales-{region}.csv");
            call(id, "read_file", &json!({ "path": path }).to_string())
        };
        let note = json!({
            "title": "sales total",
            "text": format!("The total of 3 files is {}.", self.total),
        });
        vec![
            calls(vec![call("l1", "list_files", r#"{"path": "/data"}"#)]),
            calls(vec![
                read("r1", "east"),
                read("r2", "north"),
                read("r3", "south"),
            ]),
            calls(vec![call("w1", "write_note", &note.to_string())]),
            text(&self.answer()),
        ]
    }

    /// The task as one program, then the answer.
    pub fn as_program(&self) -> Vec<Turn> {
        self.as_program_in(Language::JavaScript)
    }

    /// The task as one program in `language`, then the answer.
    pub fn as_program_in(&self, language: Language) -> Vec<Turn> {
        let arguments = json!({ "code": example_program_in(language) }).to_string();
        vec![
            calls(vec![call("p1", "run_code", &arguments)]),
            text(&self.answer()),
        ]
    }
}

impl Default for Sales {
    fn default() -> Self {
        Self::new()
    }
}

/// A provider for `model`.
pub fn provider(model: &ScriptedModel) -> Arc<dyn Provider> {
    let options = HttpOptions {
        timeout: Duration::from_secs(20),
        max_retries: 0,
        ..HttpOptions::default()
    };
    let base_url = model.base_url();
    match model.format() {
        Format::OpenAi => {
            Arc::new(OpenAiProvider::new(&base_url, "scripted", None, options).expect("a provider"))
        }
        Format::Anthropic => Arc::new(
            AnthropicProvider::new(&base_url, "scripted", Some("test-key".into()), options)
                .expect("a provider"),
        ),
    }
}

/// Runs the task against `model` with `toolbox`, the audit log at `audit` if given.
pub async fn run(
    model: &ScriptedModel,
    toolbox: Arc<Toolbox>,
    agent_options: AgentOptions,
    options: &RunOptions,
    audit: Option<&Path>,
) -> RunResult {
    let mut agent = Agent::new(provider(model), toolbox, agent_options);
    if let Some(path) = audit {
        agent = agent.with_audit(Arc::new(AuditLog::open(path).expect("the log opens")));
    }
    let mut conversation = Conversation::new();
    conversation.push_user(TASK);
    agent
        .run(&mut conversation, options, &mut |_| {})
        .await
        .expect("the run ends with an answer")
}

/// The bytes of every request the model was sent.
pub fn request_bytes(model: &ScriptedModel) -> usize {
    model
        .requests()
        .iter()
        .map(|request| request.body.len())
        .sum()
}

/// The task played both ways against scripted models of `format`: (model turns, request
/// bytes) step by step, then as one program.
pub async fn both_ways(runtime: &Runtime, format: Format) -> ((usize, usize), (usize, usize)) {
    let sales = Sales::new();
    let toolbox = sales.toolbox(runtime).await;
    let plain = ScriptedModel::start(format, sales.step_by_step()).await;
    let options = RunOptions::default();
    run(
        &plain,
        toolbox.clone(),
        AgentOptions::default(),
        &options,
        None,
    )
    .await;
    std::fs::remove_file(sales.note().0).expect("the step-by-step run wrote the note");
    let coded = ScriptedModel::start(format, sales.as_program()).await;
    let options = RunOptions {
        code_mode: Some(code_mode(runtime).await),
        ..RunOptions::default()
    };
    run(&coded, toolbox, AgentOptions::default(), &options, None).await;
    (
        (plain.requests().len(), request_bytes(&plain)),
        (coded.requests().len(), request_bytes(&coded)),
    )
}
