//! The embedding application's own functions as tools: a typed function and a description;
//! the argument schema comes from the argument type, as in the guest SDK. See [`NativeTools`].

use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use futures::future::BoxFuture;
use schemars::{JsonSchema, Schema, generate::SchemaSettings};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::arguments::Arguments;
use crate::error::CallError;
use crate::error::TimeLimit;
use crate::sandbox::Limits;
use crate::source::{CallContext, ToolOutput};
use crate::source::{Origin, ToolSource};
use crate::spec::ToolSpec;

type Handler =
    Arc<dyn Fn(Value, CallContext) -> BoxFuture<'static, Result<Value, Failure>> + Send + Sync>;

enum Failure {
    Arguments(String),
    Failed(String),
}

/// A set of the application's functions, offered as tools: a typed function and a
/// description each; the argument schema comes from the argument type.
///
/// **Not sandboxed.** A native tool is a function of the application, run inside its process
/// with all of its authority: no grants, no memory limit, no CPU limit. What the host does
/// give it: its arguments are checked against the schema first, a wall-clock timeout (the
/// future is dropped when it runs out), the result size limit, and a panic turned into an
/// error instead of a crash. Write a component when the code should be kept in a box.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use toolhost::NativeTools;
///
/// /// The order to look up.
/// #[derive(Deserialize, JsonSchema)]
/// struct Order {
///     /// Its number, like 1042.
///     id: u32,
/// }
///
/// let tools = NativeTools::new("shop").tool(
///     "order_status",
///     "The shipping status of an order of this shop.",
///     async |order: Order| Ok::<_, String>(format!("order {} has shipped", order.id)),
/// );
/// // Host::builder().manifest("toolhost.toml").native(tools).build().await?
/// # let _ = tools;
/// ```
pub struct NativeTools {
    origin: Origin,
    tools: Vec<(ToolSpec, Handler)>,
    timeout: Duration,
    max_result: usize,
}

impl NativeTools {
    /// An empty set named `name` (for messages and `host tools`), with the default timeout
    /// and result limit of components ([`Limits::default`]).
    pub fn new(name: &str) -> Self {
        let limits = Limits::default();
        Self {
            origin: Origin::Native {
                name: name.to_owned(),
            },
            tools: Vec::new(),
            timeout: limits.timeout,
            max_result: limits.max_result,
        }
    }

    /// Adds tool `name` (what the model calls it by: letters, digits, `_` and `-`, at most
    /// 64) that runs `function`; `description` tells the model what it does and when to use
    /// it.
    ///
    /// The arguments type `A` must deserialize from a JSON object (a struct); its
    /// [`JsonSchema`] is the tool's input schema, with its doc comments as the fields'
    /// descriptions. The result `R` is sent to the model as JSON (a string as plain text); an
    /// error `E` is a tool failure with its text, which the model reads.
    pub fn tool<A, R, E, F, Fut>(self, name: &str, description: &str, function: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        R: Serialize + JsonSchema,
        E: Display,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
    {
        self.tool_with_context(name, description, move |args: A, _: CallContext| {
            function(args)
        })
    }

    /// Like [`tool`](Self::tool), for a function that also reads the call's
    /// [`CallContext`] (the tenant or user the application passed to the run).
    pub fn tool_with_context<A, R, E, F, Fut>(
        mut self,
        name: &str,
        description: &str,
        function: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        R: Serialize + JsonSchema,
        E: Display,
        F: Fn(A, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
    {
        let function = Arc::new(function);
        let handler: Handler = Arc::new(move |arguments: Value, context: CallContext| {
            let function = function.clone();
            async move {
                let args: A = serde_json::from_value(arguments)
                    .map_err(|e| Failure::Arguments(e.to_string()))?;
                let result = function(args, context)
                    .await
                    .map_err(|e| Failure::Failed(e.to_string()))?;
                serde_json::to_value(&result).map_err(|e| {
                    Failure::Failed(format!("its result cannot be written as JSON: {e}"))
                })
            }
            .boxed()
        });
        let output_schema = schema_for::<R>().to_value();
        let spec = ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: schema_for::<A>().to_value(),
            output_schema: (output_schema.get("type").and_then(Value::as_str) != Some("string"))
                .then_some(output_schema),
            requested: Vec::new(),
            annotations: Default::default(),
        };
        self.tools.push((spec, handler));
        self
    }

    /// The most time a call may take (default 30 s); when it runs out, the function's
    /// future is dropped and the call fails.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The largest result, in bytes (default 1 MiB).
    pub fn max_result(mut self, bytes: usize) -> Self {
        self.max_result = bytes;
        self
    }

    async fn run(
        &self,
        tool: &str,
        arguments: &Arguments,
        context: &CallContext,
    ) -> Result<ToolOutput, CallError> {
        let started = Instant::now();
        let Some((_, handler)) = self.tools.iter().find(|(spec, _)| spec.name == tool) else {
            return Err(CallError::UnknownTool {
                name: tool.to_owned(),
                available: self
                    .tools
                    .iter()
                    .map(|(spec, _)| spec.name.clone())
                    .collect(),
            });
        };
        let running =
            AssertUnwindSafe(handler(arguments.value().clone(), context.clone())).catch_unwind();
        let value = match tokio::time::timeout(self.timeout, running).await {
            Err(_) => {
                return Err(CallError::Timeout {
                    tool: tool.to_owned(),
                    kind: TimeLimit::WallClock,
                    limit: self.timeout,
                });
            }
            Ok(Err(panic)) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_owned());
                return Err(CallError::Trap {
                    tool: tool.to_owned(),
                    trap: format!("the native function panicked: {message}"),
                    stderr: None,
                });
            }
            Ok(Ok(Err(Failure::Arguments(message)))) => {
                return Err(CallError::InvalidArguments {
                    tool: tool.to_owned(),
                    message,
                });
            }
            Ok(Ok(Err(Failure::Failed(message)))) => {
                return Err(CallError::ToolFailed {
                    tool: tool.to_owned(),
                    message,
                });
            }
            Ok(Ok(Ok(value))) => value,
        };
        let (text, structured) = match value {
            Value::String(text) => (text, None),
            other => (other.to_string(), Some(other)),
        };
        if text.len() > self.max_result {
            return Err(CallError::ResultTooLarge {
                tool: tool.to_owned(),
                size: text.len(),
                limit: self.max_result,
            });
        }
        Ok(ToolOutput {
            structured,
            ..ToolOutput::text(text, started.elapsed())
        })
    }
}

impl std::fmt::Debug for NativeTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeTools")
            .field("name", &self.origin.name())
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|(spec, _)| &spec.name)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl ToolSource for NativeTools {
    fn origin(&self) -> &Origin {
        &self.origin
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|(spec, _)| spec.clone()).collect()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Arguments,
        context: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, CallError>> {
        Box::pin(self.run(tool, arguments, context))
    }
}

/// A schema with every subschema inlined (small models follow `$ref`s poorly) and without the
/// `$schema` and `title` keys, which only add tokens to every request (as the guest SDK
/// writes them).
fn schema_for<T: JsonSchema>() -> Schema {
    let mut schema = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<T>();
    schema.remove("title");
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Arguments {
        Arguments::parse(text).expect("test arguments are a JSON object")
    }

    #[derive(serde::Deserialize, JsonSchema)]
    struct Pair {
        /// The first number.
        a: f64,
        b: f64,
    }

    #[derive(Serialize, JsonSchema)]
    struct Sum {
        sum: f64,
    }

    fn tools() -> NativeTools {
        NativeTools::new("app")
            .tool("add", "Adds two numbers.", async |p: Pair| {
                Ok::<_, String>(Sum { sum: p.a + p.b })
            })
            .tool(
                "greet",
                "Greets.",
                async |_: serde_json::Map<String, Value>| Ok::<_, String>("hello".to_owned()),
            )
            .tool("fail", "Fails.", async |_: Pair| {
                Err::<String, _>("no such account")
            })
            .tool(
                "panic",
                "Panics.",
                async |_: Pair| -> Result<String, String> { panic!("boom") },
            )
    }

    #[tokio::test]
    async fn typed_functions_become_tools() {
        let tools = tools();
        let specs = tools.tools();
        let add = &specs[0];
        assert_eq!(add.input_schema["type"], "object");
        assert_eq!(
            add.input_schema["properties"]["a"]["description"],
            "The first number."
        );
        assert!(add.output_schema.is_some());
        assert!(specs[1].output_schema.is_none(), "a string is plain text");

        let context = CallContext::default();
        let sum = tools
            .call("add", &args(r#"{"a": 2, "b": 40}"#), &context)
            .await;
        let sum = sum.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sum.text, r#"{"sum":42.0}"#);
        assert_eq!(sum.structured, Some(serde_json::json!({"sum": 42.0})));
        let hello = tools.call("greet", &args("{}"), &context).await;
        assert_eq!(hello.map(|o| o.text).ok().as_deref(), Some("hello"));
    }

    #[tokio::test]
    async fn errors_and_panics_are_call_errors() {
        let tools = tools();
        let context = CallContext::default();
        let failed = tools
            .call("fail", &args(r#"{"a": 1, "b": 2}"#), &context)
            .await
            .unwrap_err();
        assert!(
            matches!(&failed, CallError::ToolFailed { message, .. } if message == "no such account"),
            "{failed}"
        );
        let panicked = tools
            .call("panic", &args(r#"{"a": 1, "b": 2}"#), &context)
            .await
            .unwrap_err();
        assert!(
            panicked.to_string().contains("panicked: boom"),
            "{panicked}"
        );
        let bad = tools
            .call("add", &args(r#"{"a": "x", "b": 2}"#), &context)
            .await
            .unwrap_err();
        assert_eq!(
            bad.kind(),
            crate::error::ErrorKind::InvalidArguments,
            "{bad}"
        );
        let slow = NativeTools::new("slow")
            .tool("wait", "Waits.", async |_: Pair| {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok::<_, String>("done")
            })
            .timeout(Duration::from_millis(10));
        let error = slow
            .call("wait", &args(r#"{"a": 1, "b": 2}"#), &context)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), crate::error::ErrorKind::Timeout, "{error}");
    }
}
