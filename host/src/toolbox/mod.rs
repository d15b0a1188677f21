//! The tools of every source under one set of names: look a tool up, check its arguments
//! against its schema, route the call to its source.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tracing::Instrument;

use crate::arguments::{Arguments, ArgumentsError};
use crate::engine::component::{ComponentConfig, LoadedComponent};
use crate::engine::runtime::Runtime;
use crate::error::{CallError, LoadError};
#[cfg(feature = "mcp-client")]
use crate::mcp::client::McpServerConfig;
use crate::source::{CallContext, ToolOutput};
use crate::source::{Origin, SourceOptions, ToolSource};
use crate::spec::ToolSpec;
use crate::telemetry;
use crate::telemetry::metrics::{UNKNOWN, metrics, outcome};

pub mod access;
mod catalog;
mod changes;
#[cfg(feature = "mcp-client")]
mod mcp_servers;
mod offers;

pub use catalog::Catalog;
use catalog::{Slot, check, invalid_arguments};
pub use changes::ToolChanges;
#[cfg(feature = "mcp-server")]
pub use offers::{no_prompt, no_resource};

/// Every tool of a set of sources (sandboxed components first among them), by unique name.
/// Calls may run concurrently; a component's each run in a fresh instance.
///
/// ```no_run
/// use toolhost::{CallContext, ComponentConfig, Runtime, RuntimeConfig, Toolbox};
///
/// # async fn example() -> anyhow::Result<()> {
/// let runtime = Runtime::new(RuntimeConfig::default())?;
/// let toolbox = Toolbox::builder(&runtime)
///     .component(ComponentConfig::new("example-tools/dist/calculator.wasm"))
///     .build()
///     .await?;
/// let output = toolbox
///     .call("square_root", r#"{"x": 475695037565}"#, &CallContext::default())
///     .await?;
/// assert!(output.text.starts_with("689706.486532"));
/// # Ok(()) }
/// ```
pub struct Toolbox {
    slots: Vec<Slot>,
    catalog: RwLock<Arc<Catalog>>,
    skipped: Vec<SkippedSource>,
}

/// A source that was left out because it failed to load and was not required.
#[derive(Debug)]
pub struct SkippedSource {
    /// Its name.
    pub name: String,
    /// Why it failed.
    pub error: LoadError,
}

/// Puts a toolbox together: components to load, MCP servers to start, other sources to add.
#[must_use]
pub struct ToolboxBuilder {
    runtime: Runtime,
    components: Vec<ComponentConfig>,
    #[cfg(feature = "mcp-client")]
    mcp_servers: Vec<McpServerConfig>,
    sources: Vec<(Arc<dyn ToolSource>, SourceOptions)>,
}

impl ToolboxBuilder {
    /// Adds a component to load.
    pub fn component(mut self, config: ComponentConfig) -> Self {
        self.components.push(config);
        self
    }

    /// Adds components to load.
    pub fn components(mut self, configs: impl IntoIterator<Item = ComponentConfig>) -> Self {
        self.components.extend(configs);
        self
    }

    /// Adds a source of tools (its tools are offered as `options` say).
    pub fn source(mut self, source: Arc<dyn ToolSource>, options: SourceOptions) -> Self {
        self.sources.push((source, options));
        self
    }

    /// Loads the components and starts the MCP servers, all concurrently, and puts every
    /// tool under its name, in that order (components, MCP servers, added sources). Fails on
    /// the first required component or server that cannot be loaded, on a `tools` list
    /// naming a tool its source does not offer, and when two tools end up with the same
    /// name; a component or server that is not required and fails is left out, with a
    /// warning naming it and why.
    pub async fn build(self) -> Result<Toolbox, LoadError> {
        #[cfg(feature = "mcp-client")]
        let mcp_loads = mcp_servers::start(self.mcp_servers);
        let loads = self.components.into_iter().map(|config| {
            let runtime = self.runtime.clone();
            async move {
                let required = config.required;
                let name = config.name.clone();
                let options = config.options.clone();
                (
                    name,
                    required,
                    options,
                    LoadedComponent::load(&runtime, config).await,
                )
            }
        });
        #[cfg(feature = "mcp-client")]
        let (loaded_components, loaded_servers) =
            futures::future::join(futures::future::join_all(loads), mcp_loads).await;
        #[cfg(not(feature = "mcp-client"))]
        let loaded_components = futures::future::join_all(loads).await;
        let mut slots = Vec::new();
        let mut skipped = Vec::new();
        for (name, required, options, loaded) in loaded_components {
            let Some(component) = kept(name, required, loaded, &mut skipped, |name, error| {
                tracing::warn!(
                    component = %name,
                    "left out (not required) because it failed to load: {error}"
                );
            })?
            else {
                continue;
            };
            let component = Arc::new(component);
            slots.push(Slot {
                source: component.clone(),
                options,
                component: Some(component),
                #[cfg(feature = "mcp-client")]
                mcp: None,
            });
        }
        #[cfg(feature = "mcp-client")]
        mcp_servers::add_slots(loaded_servers, &mut slots, &mut skipped)?;
        slots.extend(self.sources.into_iter().map(|(source, options)| Slot {
            source,
            options,
            component: None,
            #[cfg(feature = "mcp-client")]
            mcp: None,
        }));
        let catalog = Catalog::build(&slots, None)?;
        Ok(Toolbox {
            slots,
            catalog: RwLock::new(Arc::new(catalog)),
            skipped,
        })
    }
}

/// What became of loading source `name`: the source, or (when it is not required) nothing,
/// its failure warned about and kept in `skipped`; a required source's failure is the error.
fn kept<T>(
    name: String,
    required: bool,
    loaded: Result<T, LoadError>,
    skipped: &mut Vec<SkippedSource>,
    warn: impl FnOnce(&str, &str),
) -> Result<Option<T>, LoadError> {
    match loaded {
        Ok(source) => Ok(Some(source)),
        Err(error) if required => Err(error),
        Err(error) => {
            warn(&name, &crate::error::chain(&error));
            skipped.push(SkippedSource { name, error });
            Ok(None)
        }
    }
}

impl Toolbox {
    /// Starts putting a toolbox together; components load on `runtime`.
    pub fn builder(runtime: &Runtime) -> ToolboxBuilder {
        ToolboxBuilder {
            runtime: runtime.clone(),
            components: Vec::new(),
            #[cfg(feature = "mcp-client")]
            mcp_servers: Vec::new(),
            sources: Vec::new(),
        }
    }

    /// The tools now. When a source's tools changed since the last look (an MCP server said
    /// so), they are listed again first; if that fails, the tools stay as they were and the
    /// failure is logged.
    pub fn catalog(&self) -> Arc<Catalog> {
        let current = self
            .catalog
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let changed = self
            .slots
            .iter()
            .zip(&current.generations)
            .any(|(slot, &seen)| slot.source.generation() != seen);
        if !changed {
            return current;
        }
        match Catalog::build(&self.slots, Some(&current)) {
            Ok(catalog) => {
                let catalog = Arc::new(catalog);
                *self.catalog.write().unwrap_or_else(|e| e.into_inner()) = catalog.clone();
                catalog
            }
            Err(error) => {
                tracing::warn!("the tools changed, but cannot be listed again: {error}");
                current
            }
        }
    }

    /// Lists again the tools of every source that said they changed (an MCP server's
    /// `tools/list_changed`), so that the next [`catalog`](Self::catalog) has them. The loop
    /// calls it before each model turn. A source that cannot list them keeps its old list.
    pub async fn refresh(&self) {
        futures::future::join_all(self.slots.iter().map(|slot| slot.source.refresh())).await;
    }

    /// Where to wait for the tools to change: a source's list changed and was taken in (an
    /// MCP server's `tools/list_changed`), so that [`catalog`](Self::catalog) has the new one.
    /// Only sources that say they can change ([`ToolSource::tool_changes`]) are waited for.
    pub fn changes(&self) -> ToolChanges {
        ToolChanges::new(
            self.slots
                .iter()
                .filter_map(|slot| slot.source.tool_changes()),
        )
    }

    /// Stops what the sources run (MCP servers' processes), politely, all at once. Calls
    /// after it fail. Dropping the toolbox without it stops them too, but abruptly.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.slots.iter().map(|slot| slot.source.shutdown())).await;
    }

    /// Every tool, in source order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.catalog().iter().cloned().collect()
    }

    /// The tool called `name`.
    pub fn spec(&self, name: &str) -> Option<ToolSpec> {
        self.catalog().get(name).cloned()
    }

    /// The names of every tool, in source order.
    pub fn names(&self) -> Vec<String> {
        self.catalog().names()
    }

    /// Where tool `name` comes from.
    pub fn origin(&self, name: &str) -> Option<Origin> {
        self.catalog().origin(name).cloned()
    }

    /// The loaded components, in load order.
    pub fn components(&self) -> impl Iterator<Item = &Arc<LoadedComponent>> {
        self.slots.iter().filter_map(|slot| slot.component.as_ref())
    }

    /// Every source, in order.
    pub fn sources(&self) -> impl Iterator<Item = &Arc<dyn ToolSource>> {
        self.slots.iter().map(|slot| &slot.source)
    }

    /// The source of tool `name`.
    pub fn source_of(&self, name: &str) -> Option<Arc<dyn ToolSource>> {
        let catalog = self.catalog();
        let entry = &catalog.entries[*catalog.index.get(name)?];
        Some(self.slots[entry.slot].source.clone())
    }

    /// The sources left out because they failed to load and were not required.
    pub fn skipped(&self) -> &[SkippedSource] {
        &self.skipped
    }

    /// Loads the code of every component now (those whose tools came from the compile cache
    /// load it at their first call otherwise). Returns the first failure.
    pub async fn prepare(&self) -> Result<(), LoadError> {
        futures::future::try_join_all(self.components().map(|c| c.prepare()))
            .await
            .map(|_| ())
    }

    /// Checks `arguments` against the schema of tool `name`, without running it.
    pub fn check_arguments(&self, name: &str, arguments: &Arguments) -> Result<(), CallError> {
        check(&self.catalog(), name, arguments).map(drop)
    }

    /// Calls tool `name` with `arguments`, a JSON object as text (empty text is `{}`, as
    /// several models send for tools that take none): parses them, then
    /// [`call_parsed`](Self::call_parsed).
    pub async fn call(
        &self,
        name: &str,
        arguments: &str,
        context: &CallContext,
    ) -> Result<ToolOutput, CallError> {
        let arguments = match Arguments::parse(arguments) {
            Ok(arguments) => arguments,
            Err(error) => {
                let catalog = self.catalog();
                let message = match error {
                    ArgumentsError::NotJson(e) => {
                        format!("the arguments are not valid JSON ({e})")
                    }
                    other => other.to_string(),
                };
                let refused = Err(match catalog.index.get(name) {
                    Some(_) => invalid_arguments(&catalog, name, message),
                    None => CallError::UnknownTool {
                        name: name.to_owned(),
                        available: catalog.names(),
                    },
                });
                record_call(&catalog, name, &refused, Duration::ZERO);
                return refused;
            }
        };
        self.call_parsed(name, &arguments, context).await
    }

    /// Calls tool `name` with `arguments`. They are checked against the tool's schema first;
    /// when they do not fit, the tool does not run. An optional argument that is `null` where
    /// the schema takes no `null` is left out ("not given", as models and MCP clients write it).
    pub async fn call_parsed(
        &self,
        name: &str,
        arguments: &Arguments,
        context: &CallContext,
    ) -> Result<ToolOutput, CallError> {
        let started = Instant::now();
        let catalog = self.catalog();
        let result = match check(&catalog, name, arguments) {
            Err(refused) => Err(refused),
            Ok(None) => self.route(&catalog, name, arguments, context).await,
            Ok(Some(given)) => self.route(&catalog, name, &given, context).await,
        };
        record_call(&catalog, name, &result, started.elapsed());
        result
    }

    /// Calls tool `name` with `arguments` passed to its source as they are, without checking
    /// them against the schema: for testing how a component handles bad arguments itself (the
    /// conformance suite does). Everything else (grants, limits) applies.
    pub async fn call_unchecked(
        &self,
        name: &str,
        arguments: &str,
        context: &CallContext,
    ) -> Result<ToolOutput, CallError> {
        let started = Instant::now();
        let arguments = Arguments::unchecked(arguments);
        let catalog = self.catalog();
        let result = self.route(&catalog, name, &arguments, context).await;
        record_call(&catalog, name, &result, started.elapsed());
        result
    }

    async fn route(
        &self,
        catalog: &Catalog,
        name: &str,
        arguments: &Arguments,
        context: &CallContext,
    ) -> Result<ToolOutput, CallError> {
        let Some(&at) = catalog.index.get(name) else {
            return Err(CallError::UnknownTool {
                name: name.to_owned(),
                available: catalog.names(),
            });
        };
        let entry = &catalog.entries[at];
        let source = &self.slots[entry.slot].source;
        // The GenAI conventions' `execute_tool` span, with toolhost's own fields.
        let span = tracing::info_span!(
            "tool_call",
            otel.name = %format_args!("execute_tool {name}"),
            otel.status_code = tracing::field::Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = name,
            gen_ai.tool.call.id = %context.call_id,
            error.type = tracing::field::Empty,
            gen_ai.tool.call.arguments = tracing::field::Empty,
            gen_ai.tool.call.result = tracing::field::Empty,
            tool = name,
            source = entry.origin.name(),
            call_id = %context.call_id,
            outcome = tracing::field::Empty,
        );
        let captures = telemetry::captures_content();
        if captures {
            span.record(
                "gen_ai.tool.call.arguments",
                telemetry::captured(arguments.text()),
            );
        }
        let recorded = span.clone();
        async move {
            let result = source
                .call(&entry.own_name, arguments, context)
                .await
                .map_err(|error| error.with_tool(name));
            let span = recorded;
            match &result {
                Ok(output) => {
                    span.record("outcome", "ok");
                    if captures {
                        span.record("gen_ai.tool.call.result", telemetry::captured(&output.text));
                    }
                    tracing::debug!(duration = ?output.duration, "tool call finished");
                }
                Err(error) => {
                    span.record("outcome", error.kind().as_str());
                    span.record("error.type", outcome(&result));
                    span.record("otel.status_code", "ERROR");
                    tracing::debug!("tool call failed: {error}");
                }
            }
            result
        }
        .instrument(span)
        .await
    }
}

/// Counts a call of `name` that ended with `result` after `took`: under its name when the
/// catalog has it, else under [`UNKNOWN`] (a caller's made-up names make no new series).
fn record_call<T>(catalog: &Catalog, name: &str, result: &Result<T, CallError>, took: Duration) {
    let tool = if catalog.index.contains_key(name) {
        name
    } else {
        UNKNOWN
    };
    metrics().tool_call(tool, result, took);
}
