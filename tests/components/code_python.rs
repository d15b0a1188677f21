//! Code mode's Python runner (`code-runners/runner-py`, built from source with
//! componentize-py): the same program calls real tools through the host, and the hostile
//! programs of `code.rs` written in Python end with a typed error, the host alive. The
//! runner imports WASI's command interfaces (CPython links them); these tests show that they
//! reach nothing: no file, no environment variable, no socket.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tokio::sync::OnceCell;
use toolhost::code::{CodeMode, CodeModeConfig, Language};
use toolhost::sandbox::{NestedCalls, NestedErrorKind, ProgramLimits};
use toolhost::{CallError, CodeRunner, Limits, ProgramError, ProgramRun};
use toolhost_tests::components::RUNNER_PY;
use toolhost_tests::{runtime, scripted};

use super::code::{Concurrency, RefusesAdd, calls, calls_approved_by, ends, limits, toolbox};

/// The Python runner, loaded once for the binary.
async fn runner() -> &'static CodeRunner {
    static RUNNER: OnceCell<CodeRunner> = OnceCell::const_new();
    RUNNER
        .get_or_init(|| async {
            CodeRunner::load(&runtime(), scripted(RUNNER_PY))
                .await
                .expect("the Python runner loads")
        })
        .await
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
    let run = program("return await tools.add(a=1, b=2)").await;
    assert_eq!(run.result.expect("a plain program runs"), json!(3.0));
}

#[tokio::test]
async fn the_python_runner_declares_its_language_and_the_tool_says_it() {
    assert_eq!(runner().await.language(), Language::Python);
    let code = CodeMode::load(&runtime(), CodeModeConfig::new(scripted(RUNNER_PY)))
        .await
        .expect("code mode loads");
    let toolbox = toolbox().await;
    let specs = toolbox.specs();
    let spec = code.spec(&specs.iter().collect::<Vec<_>>());
    assert!(
        spec.description.starts_with("Runs a Python program"),
        "{}",
        spec.description
    );
    assert!(
        spec.description
            .contains("`await tools.NAME(arg=value, ...)`"),
        "{}",
        spec.description
    );
    // The tools, as Python signatures.
    assert!(
        spec.description
            .contains("async def square_root(*,\n    x: float,"),
        "{}",
        spec.description
    );
    assert_eq!(
        spec.input_schema["properties"]["code"]["description"],
        json!(
            "The program: the body of an async Python function that calls the tools and returns the answer's data."
        )
    );
}

#[tokio::test]
async fn a_program_calls_tools_loops_and_returns_only_what_it_wants() {
    let run = program(
        r#"
total = 0
for x in [1, 4, 9, 16]:
    total += await tools.square_root(x=x)
print("summed", 4, "roots")
# One dict instead of keywords, as for argument names that are not Python names.
product = await tools.multiply({"a": total, "b": 2})
return {"total": total, "product": product}
"#,
    )
    .await;
    assert_eq!(
        run.result.expect("the program runs"),
        json!({"total": 10.0, "product": 20.0})
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
    assert_eq!(run.calls[1].arguments, r#"{"x": 4}"#);
    assert!(
        run.calls
            .iter()
            .all(|call| call.outcome.as_ref().is_some_and(Result::is_ok))
    );
}

#[tokio::test]
async fn calls_gathered_together_run_in_parallel_up_to_the_limit() {
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
        "slept = await asyncio.gather(*[tools.sleep(ms=100) for _ in range(6)])\n\
         return len(slept)",
        calls,
        limits(),
        program,
    )
    .await;
    assert_eq!(run.result.expect("the program runs"), json!(6));
    let most = most.load(Ordering::SeqCst);
    assert!(most > 1, "the calls ran one at a time");
    assert!(most <= 3, "{most} calls ran at once, over the limit of 3");
}

#[tokio::test]
async fn a_failed_call_is_an_error_the_program_catches_with_its_kind() {
    let run = program(
        r#"
kinds = []
for tool, args in [("env", {"name": "HOME"}), ("nope", {}), ("square_root", {"x": "two"}),
                   ("crash", {}), ("spin", {})]:
    try:
        await getattr(tools, tool)(**args)
        kinds.append("ok")
    except ToolError as e:
        kinds.append(f"{type(e).__name__}:{e.kind}:{e.tool}")
return kinds
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
    // Uncaught, the error names the tool and its kind.
    let run = program("return await tools.nope()").await;
    match run.result {
        Err(ProgramError::Thrown(message)) => {
            assert!(
                message.contains("ToolError: nope: not-offered"),
                "{message}"
            )
        }
        other => panic!("expected a thrown error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_program_that_never_returns_is_stopped_by_its_cpu_time() {
    ends::by_cpu_time(runner().await, "while True:\n    pass").await;
    still_serving().await;
}

#[tokio::test]
async fn a_program_waiting_on_its_calls_is_stopped_by_the_wall_clock() {
    ends::by_wall_clock(runner().await, "while True:\n    await tools.sleep(ms=50)").await;
    still_serving().await;
}

#[tokio::test]
async fn a_program_waiting_on_what_nothing_will_finish_is_told_so() {
    // asyncio's timers work (the loop sleeps); a future no one sets would wait forever.
    let run = program("await asyncio.sleep(0.01)\nreturn 'slept'").await;
    assert_eq!(run.result.expect("the program sleeps"), json!("slept"));
    let run = program("await asyncio.get_running_loop().create_future()").await;
    match run.result {
        Err(ProgramError::Thrown(message)) => {
            assert!(message.contains("nothing will finish"), "{message}")
        }
        other => panic!("expected a thrown error, got {other:?}"),
    }
    still_serving().await;
}

#[tokio::test]
async fn endless_recursion_is_an_error_of_the_program() {
    let run = program("def down(n):\n    return down(n + 1) + 1\nreturn down(0)").await;
    match run.result {
        Err(ProgramError::Thrown(message)) => {
            assert!(message.contains("RecursionError"), "{message}");
            assert!(message.contains("in down"), "{message}");
        }
        other => panic!("expected a thrown error, got {other:?}"),
    }
    still_serving().await;
}

#[tokio::test]
async fn allocating_without_end_is_stopped_by_the_memory_limit() {
    // CPython may see the refused allocation first, as its MemoryError.
    let code = "kept = []\nwhile True:\n    kept.append(bytearray(1 << 20))";
    ends::by_memory(runner().await, code, "MemoryError").await;
    still_serving().await;
}

#[tokio::test]
async fn printing_100_mb_is_stopped_at_the_output_limit() {
    for code in [
        "line = 'x' * (1 << 20)\nfor _ in range(100):\n    print(line)",
        // Past `print`: the program's sys.stdout goes to the same bounded output.
        "import sys\nline = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(line)",
    ] {
        ends::at_the_output_limit(runner().await, code).await;
        still_serving().await;
    }
}

#[tokio::test]
async fn ten_thousand_calls_are_stopped_at_the_call_limit_even_when_caught() {
    ends::at_the_call_limit(
        runner().await,
        r#"
for i in range(10000):
    try:
        await tools.fail()
    except BaseException:
        pass  # and again
return "done"
"#,
    )
    .await;
    still_serving().await;
}

#[tokio::test]
async fn a_result_over_the_limit_is_refused() {
    ends::with_its_result_refused(runner().await, "return 'x' * 5000").await;
}

#[tokio::test]
async fn a_program_reaches_no_file_no_environment_and_no_socket() {
    // A server on this machine the program tries to reach: it must see no connection.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("its address").port();
    let run = program(&format!(
        r#"
import os, socket
seen = {{}}
def attempt(name, what):
    try:
        seen[name] = repr(what())
    except BaseException as error:
        seen[name] = type(error).__name__
attempt("listdir", lambda: os.listdir("/"))
attempt("open", lambda: open("/etc/passwd").read())
attempt("cwd", lambda: os.listdir("."))
attempt("environ", lambda: dict(os.environ))
attempt("connect", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=1))
attempt("resolve", lambda: socket.getaddrinfo("localhost", 80))
return seen
"#
    ))
    .await;
    let seen = run.result.expect("the program runs");
    assert_eq!(seen["environ"], json!("{}"), "{seen}");
    for name in ["listdir", "open", "cwd", "connect", "resolve"] {
        let what = seen[name].as_str().unwrap_or_default();
        assert!(
            what.ends_with("Error") || what == "gaierror",
            "{name} reached something: {seen}"
        );
    }
    match listener.accept() {
        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the program connected to the local server: {other:?}"),
    }
    // Leaving the interpreter ends the program, not the host.
    let run = program("import os\nos._exit(3)").await;
    assert!(
        matches!(
            run.result,
            Err(ProgramError::Runner(CallError::Exited { .. }))
        ),
        "{:?}",
        run.result
    );
    let run = program("import sys\nsys.exit(3)").await;
    assert!(
        matches!(&run.result, Err(ProgramError::Thrown(message)) if message.contains("SystemExit")),
        "{:?}",
        run.result
    );
    still_serving().await;
}

#[tokio::test]
async fn a_program_of_one_expression_returns_its_value() {
    let run = program("await tools.multiply(a=6, b=7)").await;
    assert_eq!(run.result.expect("an expression is a program"), json!(42.0));
    // A call returned without `await` gives its result, as in JavaScript.
    let run = program("tools.multiply(a=6, b=7)").await;
    assert_eq!(run.result.expect("a call is a program"), json!(42.0));
    let run = program("x = await tools.multiply(a=6, b=7)").await;
    assert_eq!(run.result.expect("statements run"), json!(null));
    assert_eq!(run.calls.len(), 1);
}

#[tokio::test]
async fn a_program_that_does_not_compile_says_where() {
    let broken = program("x = 1\nreturn (1 +").await;
    match broken.result {
        Err(ProgramError::Syntax(message)) => {
            assert!(message.contains("SyntaxError"), "{message}");
            assert!(message.contains("line 2"), "{message}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
    let thrown = program("raise ValueError('on purpose')").await;
    match thrown.result {
        Err(ProgramError::Thrown(message)) => {
            assert!(message.contains("ValueError: on purpose"), "{message}")
        }
        other => panic!("expected a thrown error, got {other:?}"),
    }
    for not_json in ["return {1, 2}", "return float('nan')"] {
        match program(not_json).await.result {
            Err(ProgramError::Thrown(message)) => {
                assert!(message.contains("not JSON"), "{not_json}: {message}")
            }
            other => panic!("{not_json}: expected a thrown error, got {other:?}"),
        }
    }
}

/// A Python program that catches each denial and asks again forever is ended at the call
/// limit: every call was asked about and refused, none ran, and the host goes on.
#[tokio::test]
async fn a_program_retrying_a_denied_call_forever_ends_at_the_call_limit() {
    let approval = Arc::new(RefusesAdd(AtomicUsize::new(0)));
    let code = r#"
denied = 0
while True:
    try:
        await tools.add(a=1, b=2)
    except ToolError as error:
        if error.kind == "denied":
            denied += 1
"#;
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
