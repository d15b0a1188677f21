//! The set of loaded tools: look a tool up by name, check its arguments, call it.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use tracing::Instrument;

use crate::call::{self, CallContext, ToolOutput};
use crate::component::{CompileObserver, ComponentConfig, LoadedComponent};
use crate::spec::ToolSpec;
use crate::{CallError, LoadError, Runtime};

/// Every tool of a set of loaded components, by name. Calls may run concurrently; each runs
/// in a fresh instance of its component.
///
/// ```no_run
/// use toolhost::{CallContext, ComponentConfig, Runtime, RuntimeConfig, Toolbox};
///
/// # async fn example() -> anyhow::Result<()> {
/// let runtime = Runtime::new(RuntimeConfig::default())?;
/// let calculator = ComponentConfig::new("example-tools/dist/calculator.wasm");
/// let toolbox = Toolbox::load(&runtime, vec![calculator], None).await?;
/// let output = toolbox
///     .call("square_root", r#"{"x": 475695037565}"#, &CallContext::default())
///     .await?;
/// assert!(output.text.starts_with("689706.486532"));
/// # Ok(()) }
/// ```
pub struct Toolbox {
    runtime: Runtime,
    components: Vec<Arc<LoadedComponent>>,
    /// Tool name to (component index, tool index).
    index: HashMap<String, (usize, usize)>,
}

impl Toolbox {
    /// Loads every component in `configs`, concurrently. Fails on the first component that
    /// cannot be loaded, or when two components offer a tool of the same name.
    pub async fn load(
        runtime: &Runtime,
        configs: Vec<ComponentConfig>,
        on_compile: Option<CompileObserver>,
    ) -> Result<Self, LoadError> {
        let loads = configs
            .into_iter()
            .map(|config| LoadedComponent::load(runtime, config, on_compile.clone()));
        let components = futures::future::try_join_all(loads).await?;
        Self::from_components(runtime, components)
    }

    /// A toolbox of components loaded already.
    pub fn from_components(
        runtime: &Runtime,
        components: Vec<LoadedComponent>,
    ) -> Result<Self, LoadError> {
        let mut index = HashMap::new();
        for (c, component) in components.iter().enumerate() {
            for (t, (spec, _)) in component.tools.iter().enumerate() {
                if let Some(&(first, _)) = index.get(&spec.name) {
                    let first: &LoadedComponent = &components[first];
                    return Err(LoadError::DuplicateTool {
                        tool: spec.name.clone(),
                        first: first.path().to_owned(),
                        second: component.path().to_owned(),
                    });
                }
                index.insert(spec.name.clone(), (c, t));
            }
        }
        Ok(Self {
            runtime: runtime.clone(),
            components: components.into_iter().map(Arc::new).collect(),
            index,
        })
    }

    /// The loaded components, in load order.
    pub fn components(&self) -> &[Arc<LoadedComponent>] {
        &self.components
    }

    /// Every tool, in component order.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.components.iter().flat_map(|c| c.tools())
    }

    /// The tool called `name`.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        let &(c, t) = self.index.get(name)?;
        Some(&self.components[c].tools[t].0)
    }

    /// The component that offers tool `name`.
    pub fn component_of(&self, name: &str) -> Option<&LoadedComponent> {
        let &(c, _) = self.index.get(name)?;
        Some(&self.components[c])
    }

    /// The names of every tool, in component order.
    pub fn names(&self) -> Vec<String> {
        self.specs().map(|spec| spec.name.clone()).collect()
    }

    /// Checks `arguments` (a JSON object as text) against the schema of tool `name`, without
    /// running it. Empty arguments count as `{}`, as several models send them for tools that
    /// take none.
    pub fn check_arguments(&self, name: &str, arguments: &str) -> Result<Value, CallError> {
        let &(c, t) = self.index.get(name).ok_or_else(|| CallError::UnknownTool {
            name: name.to_owned(),
            available: self.names(),
        })?;
        let validator = &self.components[c].tools[t].1;
        let text = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        let invalid = |message: String| CallError::InvalidArguments {
            tool: name.to_owned(),
            message,
        };
        let value: Value = serde_json::from_str(text)
            .map_err(|e| invalid(format!("the arguments are not valid JSON ({e})")))?;
        let problems: Vec<String> = validator
            .iter_errors(&value)
            .take(3)
            .map(|error| {
                let at = error.instance_path().to_string();
                if at.is_empty() {
                    error.to_string()
                } else {
                    format!("at {at}: {error}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(value)
        } else {
            Err(invalid(problems.join("; ")))
        }
    }

    /// Calls tool `name` with `arguments` (a JSON object as text). The arguments are checked
    /// against the tool's schema first; when they do not fit, the tool does not run.
    pub async fn call(
        &self,
        name: &str,
        arguments: &str,
        context: &CallContext,
    ) -> Result<ToolOutput, CallError> {
        self.check_arguments(name, arguments)?;
        let arguments = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        self.call_unchecked(name, arguments, context).await
    }

    /// Calls tool `name` with `arguments` passed to the component as they are, without
    /// checking them against the schema: for testing how a component handles bad arguments
    /// itself (the conformance suite does). Everything else (grants, limits) applies.
    pub async fn call_unchecked(
        &self,
        name: &str,
        arguments: &str,
        context: &CallContext,
    ) -> Result<ToolOutput, CallError> {
        let Some(&(c, _)) = self.index.get(name) else {
            return Err(CallError::UnknownTool {
                name: name.to_owned(),
                available: self.names(),
            });
        };
        let component = &self.components[c];
        let span = tracing::info_span!(
            "tool_call",
            tool = name,
            component = component.name(),
            call_id = %context.call_id,
            outcome = tracing::field::Empty,
        );
        async {
            let result = call::call_tool(
                &self.runtime,
                &component.pre,
                &component.sandbox,
                name,
                arguments,
                context,
            )
            .await;
            let span = tracing::Span::current();
            match &result {
                Ok(output) => {
                    span.record("outcome", "ok");
                    tracing::debug!(duration = ?output.duration, "tool call finished");
                }
                Err(error) => {
                    span.record("outcome", error.kind());
                    tracing::debug!("tool call failed: {error}");
                }
            }
            result
        }
        .instrument(span)
        .await
    }
}
