//! Tools that misbehave on purpose, one way each, so the host tests can check that every
//! limit holds and that the host keeps serving calls afterwards.

use std::collections::BTreeMap;
use std::io::Write as _;

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{CallContext, Tool, ToolError, Toolbox};

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// A size.
#[derive(Deserialize, JsonSchema)]
struct Size {
    /// How many bytes.
    bytes: u64,
}

/// A duration.
#[derive(Deserialize, JsonSchema)]
struct Millis {
    /// How many milliseconds.
    ms: u64,
}

/// A name.
#[derive(Deserialize, JsonSchema)]
struct Name {
    /// The name.
    name: String,
}

/// An address.
#[derive(Deserialize, JsonSchema)]
struct Address {
    /// `host:port` or a URL.
    address: String,
}

/// Computes forever.
fn spin(_: Nothing) -> Result<u64, ToolError> {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// Allocates (and touches) memory until it gets none.
fn hog(_: Nothing) -> Result<u64, ToolError> {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    loop {
        blocks.push(vec![1u8; 1 << 20]);
        std::hint::black_box(&blocks);
    }
}

/// Returns `bytes` bytes of text.
fn flood(size: Size) -> Result<String, ToolError> {
    Ok("x".repeat(size.bytes as usize))
}

/// How many times to report.
#[derive(Deserialize, JsonSchema)]
struct Times {
    /// The number of progress reports (and log lines).
    times: u32,
    /// Whether to write a log line with each progress report (yes unless `false`).
    log: Option<bool>,
    /// Whether to call the WIT import for every progress report, as a tool written without
    /// the SDK would (no unless `true`; the SDK passes only news to the host).
    direct: Option<bool>,
}

/// Reports progress and writes a log line `times` times each, as fast as it can.
fn report(args: Times) -> Result<String, ToolError> {
    let total = f64::from(args.times);
    let log = args.log.unwrap_or(true);
    let direct = args.direct.unwrap_or(false);
    for done in 1..=args.times {
        if direct {
            toolhost_sdk::__private::bindings::toolhost::tool::report::progress(
                f64::from(done),
                Some(total),
                None,
            );
        } else {
            toolhost_sdk::report::progress(f64::from(done), Some(total), None);
        }
        if log {
            toolhost_sdk::report::log(toolhost_sdk::report::Level::Info, &format!("line {done}"));
        }
    }
    Ok(format!("reported {} times", args.times))
}

/// Writes `bytes` bytes to stdout and a line to stderr, then returns.
fn chatter(size: Size) -> Result<String, ToolError> {
    let line = "0123456789abcdef\n".repeat(64);
    let mut written = 0;
    let mut out = std::io::stdout();
    while written < size.bytes as usize {
        let _ = out.write_all(line.as_bytes());
        written += line.len();
    }
    eprintln!("chatter done");
    Ok("done".to_owned())
}

/// Sleeps without computing.
fn sleep(millis: Millis) -> Result<String, ToolError> {
    std::thread::sleep(std::time::Duration::from_millis(millis.ms));
    Ok("awake".to_owned())
}

/// Panics.
fn crash(_: Nothing) -> Result<String, ToolError> {
    panic!("the misbehave tool crashed on purpose");
}

/// A process exit status.
#[derive(Deserialize, JsonSchema)]
struct Status {
    /// The status.
    status: i32,
}

/// Says why on stderr, then exits (WASI's `exit`) instead of returning.
fn exit(args: Status) -> Result<String, ToolError> {
    eprintln!("the misbehave tool exits on purpose");
    std::process::exit(args.status);
}

/// Fails the polite way.
fn fail(_: Nothing) -> Result<String, ToolError> {
    Err(ToolError::failed("it went wrong on purpose"))
}

/// Reads an environment variable.
fn env(name: Name) -> Result<String, ToolError> {
    std::env::var(&name.name).map_err(|_| ToolError::failed(format!("{} is not set", name.name)))
}

/// Returns the call context.
fn context(_: Nothing, ctx: &CallContext) -> Result<serde_json::Value, ToolError> {
    let values: BTreeMap<&str, &str> = ctx
        .values
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    Ok(serde_json::json!({ "call_id": ctx.call_id, "values": values }))
}

/// Opens a TCP connection and reports whether it worked.
fn connect(address: Address) -> Result<String, ToolError> {
    match std::net::TcpStream::connect(&address.address) {
        Ok(_) => Ok(format!("connected to {}", address.address)),
        Err(e) => Err(ToolError::failed(format!(
            "cannot connect to {}: {e}",
            address.address
        ))),
    }
}

/// Fetches a URL and returns the body.
fn fetch(address: Address) -> Result<String, ToolError> {
    let response = toolhost_sdk::http::get(&address.address)?.error_for_status()?;
    Ok(response.text()?.to_owned())
}

/// Counts calls in a global: it must be 1 every time, since each call is a fresh instance.
fn count(_: Nothing) -> Result<u32, ToolError> {
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    Ok(CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1)
}

/// Some text to keep.
#[derive(Deserialize, JsonSchema)]
struct Text {
    /// The text.
    text: String,
}

/// Stores `text` in zero-initialized memory (a static buffer and the heap) and returns what
/// an earlier call left there: always nothing, since every call gets a fresh instance whose
/// memory was reset.
fn remember(args: Text) -> Result<String, ToolError> {
    static BUFFER: std::sync::Mutex<[u8; 4096]> = std::sync::Mutex::new([0; 4096]);
    let mut buffer = BUFFER.lock().map_err(|_| ToolError::failed("poisoned"))?;
    let before =
        String::from_utf8_lossy(&buffer[..buffer.iter().position(|&b| b == 0).unwrap_or(4096)])
            .into_owned();
    let bytes = args.text.as_bytes();
    let len = bytes.len().min(4095);
    buffer[..len].copy_from_slice(&bytes[..len]);
    // A large heap block, written and left behind.
    let mut heap = vec![0u8; 1 << 20];
    let found = heap.windows(bytes.len().max(1)).any(|w| w == bytes);
    heap[..len].copy_from_slice(&bytes[..len]);
    std::mem::forget(heap);
    Ok(format!("before: {before:?}; in fresh heap: {found}"))
}

struct Misbehave;

impl Toolbox for Misbehave {
    fn tools() -> Vec<Tool> {
        vec![
            Tool::new("spin", "Computes forever.", spin),
            Tool::new("hog", "Allocates memory without end.", hog),
            Tool::new("flood", "Returns a result of the given size.", flood),
            Tool::new("chatter", "Prints to stdout and stderr.", chatter),
            Tool::new("sleep", "Sleeps.", sleep),
            Tool::new("crash", "Panics.", crash),
            Tool::new("exit", "Exits with a status instead of returning.", exit),
            Tool::new("fail", "Returns a tool error.", fail),
            Tool::new("env", "Reads an environment variable.", env),
            Tool::with_context("context", "Returns the call context.", context),
            Tool::new("connect", "Opens a TCP connection.", connect),
            Tool::new("fetch", "Fetches a URL.", fetch),
            Tool::new("count", "Counts its calls.", count),
            Tool::new("remember", "Keeps text in memory.", remember),
            Tool::new(
                "nothing",
                "Does its job and returns nothing.",
                |_: Nothing| Ok(()),
            ),
            Tool::new(
                "report",
                "Reports progress and a log line many times.",
                report,
            ),
        ]
    }
}

toolhost_sdk::export!(Misbehave);
