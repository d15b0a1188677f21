//! What the fuzz targets share: the async runtime they block on, and a toolbox of native
//! tools whose arguments have schemas worth checking (ranges, enums, nested objects, arrays,
//! optional fields).

use std::future::Future;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost::{NativeTools, Runtime, RuntimeConfig};

/// A single-threaded runtime, made once per process: the targets run one input at a time.
pub fn block_on<F: Future>(future: F) -> F::Output {
    static TOKIO: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    TOKIO
        .get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime")
        })
        .block_on(future)
}

/// A wasmtime runtime as light as it gets: no pooling allocator (no address space reserved
/// up front), no compile cache (every input compiled, nothing written to disk), no spare
/// instances.
pub fn wasm_runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        Runtime::new(RuntimeConfig {
            cache_dir: None,
            pooling: false,
            spare_instances: 0,
            ..RuntimeConfig::default()
        })
        .expect("a wasmtime runtime")
    })
}

/// Where a place is.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Place {
    /// The latitude, in degrees.
    #[schemars(range(min = -90.0, max = 90.0))]
    pub latitude: f64,
    /// The longitude, in degrees.
    #[schemars(range(min = -180.0, max = 180.0))]
    pub longitude: f64,
}

/// How to sort.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Smallest first.
    Ascending,
    /// Largest first.
    Descending,
}

/// The arguments of `search`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Search {
    /// What to look for.
    #[schemars(length(min = 1, max = 200))]
    pub query: String,
    /// How many results, 1 to 50.
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u8>,
    /// In which order.
    pub order: Option<Order>,
    /// Near where.
    pub near: Option<Place>,
    /// Only these tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// The arguments of `add`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Add {
    /// The first number.
    pub a: i64,
    /// The second number.
    pub b: i64,
}

/// The arguments of `nothing`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Nothing {}

/// The names of the tools of [`native_tools`].
pub const TOOL_NAMES: [&str; 3] = ["search", "add", "nothing"];

/// Three tools: `search` (a rich schema), `add` (two integers) and `nothing` (no arguments).
pub fn native_tools() -> NativeTools {
    NativeTools::new("fuzz")
        .tool("search", "Searches.", |search: Search| async move {
            Ok::<_, String>(search.tags.len())
        })
        .tool("add", "Adds two integers.", |add: Add| async move {
            add.a
                .checked_add(add.b)
                .ok_or_else(|| "the sum is too large".to_owned())
        })
        .tool("nothing", "Does nothing.", |_: Nothing| async move {
            Ok::<_, String>("done")
        })
}

/// A host with the [`native_tools`] and nothing else (no manifest, no model), made once.
pub fn host() -> Arc<toolhost::Host> {
    static HOST: OnceLock<Arc<toolhost::Host>> = OnceLock::new();
    HOST.get_or_init(|| {
        let host = block_on(
            toolhost::Host::builder()
                .runtime(wasm_runtime().clone())
                .native(native_tools())
                .connect_model(false)
                .build(),
        )
        .expect("a host of native tools");
        Arc::new(host)
    })
    .clone()
}
