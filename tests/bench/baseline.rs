//! The two baselines toolhost is compared with: a raw call into an instance kept alive, and a
//! process spawned per call.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

wasmtime::component::bindgen!({
    path: "../wit",
    world: "toolbox",
    exports: { default: async },
});

use exports::toolhost::tool::tools::{CallContext, Content, Outcome};

struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A tool's reports go nowhere here: the baseline is the call alone.
impl toolhost::tool::report::Host for State {
    fn progress(&mut self, _: f64, _: Option<f64>, _: Option<String>) {}
    fn log(&mut self, _: toolhost::tool::report::Level, _: String) {}
}

/// `iterations` calls of `add` on one instance, no limits, no argument checks.
pub async fn raw_calls(
    engine: &Engine,
    path: &str,
    arguments: &str,
    iterations: usize,
) -> anyhow::Result<Vec<Duration>> {
    let component = Component::from_file(engine, path)?;
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    toolhost::tool::report::add_to_linker::<State, wasmtime::component::HasSelf<State>>(
        &mut linker,
        |state| state,
    )?;
    let mut store = Store::new(
        engine,
        State {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        },
    );
    // The engine interrupts on epochs; give this store a deadline it never reaches.
    store.set_epoch_deadline(u64::MAX / 2);
    let instance = Toolbox::instantiate_async(&mut store, &component, &linker).await?;
    let context = CallContext {
        call_id: String::new(),
        values: Vec::new(),
        input_responses: Vec::new(),
        request_state: None,
    };
    let mut samples = Vec::with_capacity(iterations);
    for i in 0..iterations + 100 {
        let started = Instant::now();
        let result = instance
            .toolhost_tool_tools()
            .call_call(&mut store, "add", arguments, &context)
            .await?;
        if i >= 100 {
            samples.push(started.elapsed());
        }
        let text = match &result {
            Ok(Outcome::Complete(result)) => match result.content.as_slice() {
                [Content::Text(text)] => Some(text.as_str()),
                _ => None,
            },
            Ok(Outcome::InputRequired(_)) => None,
            Err(_) => None,
        };
        assert_eq!(text, Some("3.0"), "add returned {result:?}");
    }
    Ok(samples)
}

/// `spawns` runs of the native process tool, each reading `arguments` from stdin.
pub fn process_calls(arguments: &str, spawns: usize) -> anyhow::Result<Vec<Duration>> {
    let tool = env!("CARGO_BIN_EXE_bench-process-tool");
    let mut samples = Vec::with_capacity(spawns);
    for _ in 0..spawns {
        let started = Instant::now();
        let mut child = Command::new(tool)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(arguments.as_bytes())?;
        let output = child.wait_with_output()?;
        samples.push(started.elapsed());
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "3.0");
    }
    Ok(samples)
}
