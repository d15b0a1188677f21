//! Code mode's runner (`code-runners/runner-js`, built from source): a program calls real
//! tools through the host, and a hostile program (one that loops, recurses, allocates,
//! floods its output, calls without end, or tries to reach outside) ends with a typed error,
//! the host alive.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;
use tokio::sync::OnceCell;
use toolhost::code::{ApproveCall, Language, ToolboxCalls};
use toolhost::sandbox::{NestedCalls, NestedErrorKind, NestedOutcome, ProgramLimits};
use toolhost::{
    CallContext, CallError, CodeRunner, ComponentConfig, Limits, LoadError, ProgramError,
    ProgramRun, TimeLimit, Toolbox,
};
use toolhost_tests::components::{CALCULATOR, MISBEHAVE, RUNNER_JS, WEATHER};
use toolhost_tests::{runtime, scripted};

/// The JavaScript runner, loaded once for the binary.
async fn runner() -> &'static CodeRunner {
    static RUNNER: OnceCell<CodeRunner> = OnceCell::const_new();
    RUNNER
        .get_or_init(|| async {
            CodeRunner::load(&runtime(), scripted(RUNNER_JS))
                .await
                .expect("the JavaScript runner loads")
        })
        .await
}

/// The calculator and the misbehaving tools, in one toolbox.
pub(super) async fn toolbox() -> Arc<Toolbox> {
    static TOOLBOX: OnceLock<Arc<Toolbox>> = OnceLock::new();
    if let Some(toolbox) = TOOLBOX.get() {
        return toolbox.clone();
    }
    let mut misbehave = ComponentConfig::new(MISBEHAVE);
    misbehave.limits.cpu_time = Duration::from_millis(300);
    let toolbox = Toolbox::builder(&runtime())
        .component(ComponentConfig::new(CALCULATOR))
        .component(misbehave)
        .build()
        .await
        .expect("the tools load");
    TOOLBOX.get_or_init(|| Arc::new(toolbox)).clone()
}

/// The checks both runners' hostile programs share: each runs `code`, written in `runner`'s
/// language, and asserts how the program ended (the caller then checks the host still
/// serves).
pub(super) mod ends {
    use super::*;

    /// `code` never returns: its CPU time (300 ms) stops it.
    pub(in super::super) async fn by_cpu_time(runner: &CodeRunner, code: &str) {
        let limits = Limits {
            cpu_time: Duration::from_millis(300),
            ..Limits::default()
        };
        let run = runner
            .run(code, calls().await, limits, ProgramLimits::default())
            .await;
        match run.result {
            Err(ProgramError::Runner(CallError::Timeout { kind, limit, .. })) => {
                assert_eq!(kind, TimeLimit::CpuTime);
                assert_eq!(limit, Duration::from_millis(300));
            }
            other => panic!("expected the CPU time limit, got {other:?}"),
        }
    }

    /// `code` waits on its calls without end: the wall clock (400 ms) stops it.
    pub(in super::super) async fn by_wall_clock(runner: &CodeRunner, code: &str) {
        let limits = Limits {
            timeout: Duration::from_millis(400),
            ..limits()
        };
        let program = ProgramLimits {
            max_calls: 10_000,
            ..ProgramLimits::default()
        };
        let run = runner.run(code, calls().await, limits, program).await;
        match run.result {
            Err(ProgramError::Runner(CallError::Timeout { kind, .. })) => {
                assert_eq!(kind, TimeLimit::WallClock)
            }
            other => panic!("expected the wall-clock limit, got {other:?}"),
        }
    }

    /// `code` makes 10,000 failing calls, catching each: the call limit (100) ends it.
    pub(in super::super) async fn at_the_call_limit(runner: &CodeRunner, code: &str) {
        let run = runner
            .run(code, calls().await, limits(), ProgramLimits::default())
            .await;
        match run.result {
            Err(ProgramError::TooManyCalls { limit }) => assert_eq!(limit, 100),
            other => panic!("expected the call limit, got {other:?}"),
        }
        assert_eq!(run.calls.len(), 100);
    }

    /// `code` allocates without end: the memory limit (64 MiB) stops it, or the language
    /// sees the refused allocation first and throws its own error, which says `own_error`.
    pub(in super::super) async fn by_memory(runner: &CodeRunner, code: &str, own_error: &str) {
        let limits = Limits {
            memory: 64 << 20,
            ..limits()
        };
        let run = runner
            .run(code, calls().await, limits, ProgramLimits::default())
            .await;
        match &run.result {
            Err(ProgramError::Runner(CallError::MemoryLimit { limit, .. })) => {
                assert_eq!(*limit, 64 << 20)
            }
            Err(ProgramError::Thrown(message)) if message.contains(own_error) => {}
            other => panic!("expected the memory limit, got {other:?}"),
        }
    }

    /// `code` prints 100 MB: the output limit (64 KiB) ends it, and none of it is kept.
    pub(in super::super) async fn at_the_output_limit(runner: &CodeRunner, code: &str) {
        let run = runner
            .run(code, calls().await, limits(), ProgramLimits::default())
            .await;
        match run.result {
            Err(ProgramError::OutputTooLarge { limit }) => assert_eq!(limit, 64 * 1024),
            other => panic!("expected the output limit, got {other:?}"),
        }
        assert!(run.printed.is_empty(), "nothing over the limit was kept");
    }

    /// `code` returns 5,000 `x` (5,002 bytes of JSON): over a 4 KiB `max_result`, refused.
    pub(in super::super) async fn with_its_result_refused(runner: &CodeRunner, code: &str) {
        let limits = Limits {
            max_result: 4096,
            ..limits()
        };
        let run = runner
            .run(code, calls().await, limits, ProgramLimits::default())
            .await;
        match run.result {
            Err(ProgramError::Runner(CallError::ResultTooLarge { size, limit, .. })) => {
                assert_eq!((size, limit), (5002, 4096))
            }
            other => panic!("expected the result limit, got {other:?}"),
        }
    }
}

/// Whoever refuses every call of `add` (as a person who says no each time, over MCP), and
/// counts the questions.
pub(super) struct RefusesAdd(pub(super) AtomicUsize);

impl ApproveCall for RefusesAdd {
    fn needs(&self, tool: &str) -> bool {
        tool == "add"
    }

    fn ask(&self, _: String, _: String, _: CallContext) -> BoxFuture<'static, Result<(), String>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Box::pin(async { Err("the person said no".to_owned()) })
    }
}

impl RefusesAdd {
    /// Asserts that `run` made 100 calls, each asked about here and denied, and was ended at
    /// the call limit.
    pub(super) fn ended_at_the_call_limit(&self, run: &ProgramRun) {
        match &run.result {
            Err(ProgramError::TooManyCalls { limit }) => assert_eq!(*limit, 100),
            other => panic!("expected the call limit, got {other:?}"),
        }
        assert_eq!(run.calls.len(), 100);
        assert!(
            run.calls.iter().all(|call| matches!(
                &call.outcome,
                Some(Err(error)) if error.kind == NestedErrorKind::Denied
            )),
            "{:?}",
            run.calls
        );
        assert_eq!(
            self.0.load(Ordering::Relaxed),
            100,
            "each call was asked about"
        );
    }
}

/// The program's calls, of every tool of the toolbox but `env`, asking `approval` before
/// each call of a tool that needs it.
pub(super) async fn calls_approved_by(approval: Arc<dyn ApproveCall>) -> Arc<dyn NestedCalls> {
    let toolbox = toolbox().await;
    let offered: BTreeSet<String> = toolbox
        .names()
        .into_iter()
        .filter(|name| name != "env")
        .collect();
    let context = CallContext {
        call_id: "program".to_owned(),
        ..CallContext::default()
    };
    Arc::new(ToolboxCalls::new(toolbox, offered, context).with_approval(approval))
}

/// The program's calls, of every tool of the toolbox but `env`.
pub(super) async fn calls() -> Arc<dyn NestedCalls> {
    let toolbox = toolbox().await;
    let offered: BTreeSet<String> = toolbox
        .names()
        .into_iter()
        .filter(|name| name != "env")
        .collect();
    let context = CallContext {
        call_id: "program".to_owned(),
        ..CallContext::default()
    };
    Arc::new(ToolboxCalls::new(toolbox, offered, context))
}

pub(super) fn limits() -> Limits {
    Limits {
        cpu_time: Duration::from_secs(2),
        ..Limits::default()
    }
}

async fn program(code: &str) -> ProgramRun {
    run_with(code, calls().await, limits(), ProgramLimits::default()).await
}

async fn run_with(
    code: &str,
    calls: Arc<dyn NestedCalls>,
    limits: Limits,
    program: ProgramLimits,
) -> ProgramRun {
    runner().await.run(code, calls, limits, program).await
}

/// The runner and the tools still answer after a program failed.
async fn still_serving() {
    let run = program("return await tools.add({a: 1, b: 2});").await;
    assert_eq!(run.result.expect("a plain program runs"), json!(3));
}

#[tokio::test]
async fn a_program_calls_tools_loops_and_returns_only_what_it_wants() {
    let run = program(
        r#"
        let total = 0;
        for (const x of [1, 4, 9, 16]) {
            total += await tools.square_root({x});
        }
        console.log("summed", 4, "roots");
        return {total, product: await tools.multiply({a: total, b: 2})};
    "#,
    )
    .await;
    assert_eq!(
        run.result.expect("the program runs"),
        json!({"total": 10, "product": 20})
    );
    assert_eq!(run.printed, "summed 4 roots\n");
    let tools: Vec<&str> = run.calls.iter().map(|call| call.tool.as_str()).collect();
    assert_eq!(
        tools,
        [
            "square_root",
            "square_root",
            "square_root",
            "square_root",
            "multiply"
        ]
    );
    assert_eq!(run.calls[1].arguments, r#"{"x":4}"#);
    assert!(
        run.calls
            .iter()
            .all(|call| call.outcome.as_ref().is_some_and(Result::is_ok))
    );
}

/// Counts the calls running at once, around the toolbox's.
pub(super) struct Concurrency {
    pub(super) inner: Arc<dyn NestedCalls>,
    pub(super) running: Arc<AtomicUsize>,
    pub(super) most: Arc<AtomicUsize>,
}

impl NestedCalls for Concurrency {
    fn call(
        &self,
        index: u32,
        name: String,
        arguments: String,
    ) -> BoxFuture<'static, NestedOutcome> {
        let call = self.inner.call(index, name, arguments);
        let (running, most) = (self.running.clone(), self.most.clone());
        Box::pin(async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            let outcome = call.await;
            running.fetch_sub(1, Ordering::SeqCst);
            outcome
        })
    }
}

#[tokio::test]
async fn calls_started_together_run_in_parallel_up_to_the_limit() {
    let most = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(Concurrency {
        inner: calls().await,
        running: Arc::new(AtomicUsize::new(0)),
        most: most.clone(),
    });
    let program = ProgramLimits {
        max_parallel_calls: 3,
        ..ProgramLimits::default()
    };
    let run = run_with(
        "const slept = await Promise.all([1, 2, 3, 4, 5, 6].map(() => tools.sleep({ms: 100})));\n\
         return slept.length;",
        calls,
        limits(),
        program,
    )
    .await;
    assert_eq!(run.result.expect("the program runs"), json!(6));
    // The counter sits inside the limit's wait: it sees at most 3 at once, and more than 1.
    let most = most.load(Ordering::SeqCst);
    assert!(most > 1, "the calls ran one at a time");
    assert!(most <= 3, "{most} calls ran at once, over the limit of 3");
}

#[tokio::test]
async fn a_failed_call_is_an_error_the_program_catches_with_its_kind() {
    let run = program(
        r#"
        const kinds = [];
        for (const [tool, args] of [["env", {name: "HOME"}], ["nope", {}],
                                    ["square_root", {x: "two"}], ["crash", {}], ["spin", {}]]) {
            try { await tools[tool](args); kinds.push("ok"); }
            catch (e) { kinds.push(`${e.name}:${e.kind}:${e.tool}`); }
        }
        return kinds;
    "#,
    )
    .await;
    assert_eq!(
        run.result.expect("the program catches every failure"),
        json!([
            "ToolError:not-offered:env",
            "ToolError:not-offered:nope",
            "ToolError:invalid-arguments:square_root",
            "ToolError:failed:crash",
            "ToolError:failed:spin"
        ])
    );
    let errors: Vec<NestedErrorKind> = run
        .calls
        .iter()
        .filter_map(|call| call.outcome.clone()?.err())
        .map(|error| error.kind)
        .collect();
    assert_eq!(
        errors,
        [
            NestedErrorKind::NotOffered,
            NestedErrorKind::NotOffered,
            NestedErrorKind::InvalidArguments,
            NestedErrorKind::Failed,
            NestedErrorKind::Failed
        ]
    );
    let crash = run.calls[3].outcome.clone().unwrap().unwrap_err();
    assert!(crash.message.contains("crashed"), "{}", crash.message);
}

#[tokio::test]
async fn a_program_that_never_returns_is_stopped_by_its_cpu_time() {
    ends::by_cpu_time(runner().await, "while (true) {}").await;
    still_serving().await;
}

#[tokio::test]
async fn a_program_waiting_on_its_calls_is_stopped_by_the_wall_clock() {
    ends::by_wall_clock(
        runner().await,
        "while (true) { await tools.sleep({ms: 50}); }",
    )
    .await;
    still_serving().await;
}

#[tokio::test]
async fn endless_recursion_is_an_error_of_the_program() {
    let run = program("function down(n) { return down(n + 1) + 1; } return down(0);").await;
    match run.result {
        Err(ProgramError::Thrown(message)) => {
            assert!(message.contains("recursion"), "{message}")
        }
        other => panic!("expected a thrown error, got {other:?}"),
    }
    still_serving().await;
}

#[tokio::test]
async fn allocating_without_end_is_stopped_by_the_memory_limit() {
    // SpiderMonkey may report the failed allocation as its own error first.
    let code = "const kept = []; while (true) { kept.push(new Array(1 << 20).fill(7)); }";
    ends::by_memory(runner().await, code, "out of memory").await;
    still_serving().await;
}

#[tokio::test]
async fn printing_100_mb_is_stopped_at_the_output_limit() {
    let code = "const line = 'x'.repeat(1 << 20); for (let i = 0; i < 100; i++) console.log(line);";
    ends::at_the_output_limit(runner().await, code).await;
    still_serving().await;
}

#[tokio::test]
async fn ten_thousand_calls_are_stopped_at_the_call_limit_even_when_caught() {
    // Catching every failure and trying again does not get past the limit: the host ends the
    // program, which cannot catch that.
    ends::at_the_call_limit(
        runner().await,
        r#"
        for (let i = 0; i < 10000; i++) {
            try { await tools.fail({}); } catch (e) { /* and again */ }
        }
        return "done";
    "#,
    )
    .await;
    still_serving().await;
}

#[tokio::test]
async fn a_result_over_the_limit_is_refused() {
    ends::with_its_result_refused(runner().await, "return 'x'.repeat(5000);").await;
}

#[tokio::test]
async fn a_program_reaches_nothing_outside_but_the_tools() {
    // Names a JavaScript program might reach for do not exist in the runner.
    let run = program(
        r#"
        const seen = {};
        for (const name of ["require", "process", "Deno", "WebSocket", "XMLHttpRequest"]) {
            try { seen[name] = typeof eval(name) + " reached"; }
            catch (e) { seen[name] = e.name; }
        }
        return seen;
    "#,
    )
    .await;
    let seen = run.result.expect("the program runs");
    assert_eq!(seen.as_object().map(|o| o.len()), Some(5));
    for (name, what) in seen.as_object().unwrap() {
        assert_eq!(what, "ReferenceError", "{name}");
    }
    // Those that exist in StarlingMonkey have nothing behind them: the runner imports no
    // WASI at all (checked at load), so `fetch`, loading a module, or reading a clock end the
    // program with a crash the host reports, and the host goes on.
    for attempt in [
        r#"await fetch("http://127.0.0.1:1/")"#,
        r#"await import("fs")"#,
        "performance.now()",
    ] {
        let run = program(&format!(
            "try {{ return String({attempt}); }} catch (e) {{ return 'caught'; }}"
        ))
        .await;
        match run.result {
            Err(ProgramError::Runner(CallError::Trap { .. })) => {}
            other => panic!("{attempt}: expected the runner to stop, got {other:?}"),
        }
        still_serving().await;
    }
}

#[tokio::test]
async fn a_program_has_no_clock() {
    // `Date` reads the time the runner was built at: it never moves.
    let first = program("return Date.now();").await.result.expect("runs");
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = program("return [Date.now(), new Date().getTime()];")
        .await
        .result
        .expect("runs");
    assert_eq!(second, json!([first, first]));
}

#[tokio::test]
async fn a_program_of_one_expression_returns_its_value() {
    let run = program("tools.multiply({a: 6, b: 7})").await;
    assert_eq!(run.result.expect("an expression is a program"), json!(42));
    // Statements stay statements: `return` is still needed for a value.
    let run = program("await tools.multiply({a: 6, b: 7});").await;
    assert_eq!(run.result.expect("statements run"), json!(null));
    assert_eq!(run.calls.len(), 1);
}

#[tokio::test]
async fn a_program_that_does_not_compile_says_where() {
    let broken = program("return (1 + ;").await;
    match broken.result {
        Err(ProgramError::Syntax(message)) => assert!(message.contains("SyntaxError"), "{message}"),
        other => panic!("expected a syntax error, got {other:?}"),
    }
    let thrown = program("throw new Error('on purpose');").await;
    match thrown.result {
        Err(ProgramError::Thrown(message)) => assert!(message.contains("on purpose"), "{message}"),
        other => panic!("expected a thrown error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_runner_that_imports_more_than_its_world_is_refused_at_load() {
    // This tool component imports wasi:http: as a runner it would have more than the tools.
    let error = CodeRunner::load(&runtime(), WEATHER)
        .await
        .expect_err("a tool component is no code runner");
    match &error {
        LoadError::WrongWorld { problem, .. } => {
            assert!(problem.contains("wasi:http/outgoing-handler"), "{problem}");
            assert!(problem.contains("wasi:http/types"), "{problem}");
            assert!(
                problem.contains("may import only toolhost:code"),
                "{problem}"
            );
        }
        other => panic!("expected a wrong world, got {other:?}"),
    }
}

#[tokio::test]
async fn the_javascript_runner_declares_its_language() {
    assert_eq!(runner().await.language(), Language::JavaScript);
}

#[tokio::test]
async fn a_runner_that_names_a_language_the_host_does_not_know_is_refused() {
    // The JavaScript runner, its language section (code-runners/language.py) replaced.
    let section = |text: &str| {
        let name = "toolhost:code/language";
        let mut payload = vec![u8::try_from(name.len()).unwrap()];
        payload.extend_from_slice(name.as_bytes());
        payload.extend_from_slice(text.as_bytes());
        let mut bytes = vec![0, u8::try_from(payload.len()).unwrap()];
        bytes.extend(payload);
        bytes
    };
    let mut bytes = std::fs::read(scripted(RUNNER_JS)).unwrap();
    if bytes.ends_with(&section("javascript")) {
        bytes.truncate(bytes.len() - section("javascript").len());
    }
    bytes.extend(section("cobol"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runner-cobol.wasm");
    std::fs::write(&path, bytes).unwrap();
    match CodeRunner::load(&runtime(), &path).await {
        Err(LoadError::WrongWorld { problem, .. }) => {
            assert!(problem.contains("the language `cobol`"), "{problem}");
            assert!(problem.contains("javascript and python"), "{problem}");
        }
        other => panic!("expected the language to be refused, got {other:?}"),
    }
}

/// A program that catches each denial and asks again forever is ended at the call limit:
/// every call was asked about and refused, none ran, and the host goes on.
#[tokio::test]
async fn a_program_retrying_a_denied_call_forever_ends_at_the_call_limit() {
    let approval = Arc::new(RefusesAdd(AtomicUsize::new(0)));
    let code = r#"
let denied = 0;
for (;;) {
  try {
    await tools.add({ a: 1, b: 2 });
  } catch (error) {
    if (error.kind === "denied") denied += 1;
  }
}"#;
    let run = run_with(
        code,
        calls_approved_by(approval.clone()).await,
        limits(),
        ProgramLimits::default(),
    )
    .await;
    approval.ended_at_the_call_limit(&run);
    still_serving().await;
}
