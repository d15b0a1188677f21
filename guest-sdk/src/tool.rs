//! A tool: a name, a description for the model, and a typed function.

use std::fmt;

use schemars::{JsonSchema, Schema, generate::SchemaSettings};
use serde::{Serialize, de::DeserializeOwned};

use crate::output::{Content, Output};

/// Why a call did not produce a result.
///
/// The host reports the two cases differently to the model: invalid arguments are the model's
/// to fix (it usually retries with corrected ones), a failure is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    /// The arguments were not valid for the tool. The message says what to change.
    InvalidArguments(String),
    /// The tool ran and could not do its job. The message says what happened.
    Failed(String),
}

impl ToolError {
    /// An [`InvalidArguments`](Self::InvalidArguments) error with `message`.
    pub fn invalid_arguments(message: impl fmt::Display) -> Self {
        Self::InvalidArguments(message.to_string())
    }

    /// A [`Failed`](Self::Failed) error with `message`.
    pub fn failed(message: impl fmt::Display) -> Self {
        Self::Failed(message.to_string())
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidArguments(message) => write!(f, "invalid arguments: {message}"),
            Self::Failed(message) => write!(f, "failed: {message}"),
        }
    }
}

impl std::error::Error for ToolError {}

impl From<std::io::Error> for ToolError {
    fn from(error: std::io::Error) -> Self {
        Self::Failed(error.to_string())
    }
}

impl From<crate::http::Error> for ToolError {
    fn from(error: crate::http::Error) -> Self {
        Self::Failed(error.to_string())
    }
}

/// What the host passes with each call, never shown to the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallContext {
    /// An identifier for this call, unique within a run.
    pub call_id: String,
    /// Key/value pairs from the embedding application (a tenant, a user id, ...).
    pub values: Vec<(String, String)>,
    /// In a later round of a call whose tool asked for input ([`Reply::Ask`]): the answers,
    /// by the keys of its requests.
    pub input_responses: Vec<(String, serde_json::Value)>,
    /// The state the tool gave when it asked, back as it gave it.
    pub request_state: Option<String>,
}

impl CallContext {
    /// The answer to the request the tool made under `key`, in a later round.
    pub fn answer(&self, key: &str) -> Option<&serde_json::Value> {
        self.input_responses
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The value passed under `key`, if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A capability a tool would like the host to grant. Information only: the host decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capability {
    /// Outgoing HTTP to a host: `example.com`, `example.com:8080` or `*.example.com`.
    Http(String),
    /// Reading one environment variable.
    Env(String),
    /// Reading files under a directory, named by the path the tool sees.
    ReadDir(String),
    /// Reading and writing files under a directory, named by the path the tool sees.
    WriteDir(String),
    /// Raw TCP or UDP connections to `host:port`.
    Socket(String),
}

type Handler = Box<dyn Fn(&str, &CallContext) -> Result<Reply, ToolError>>;

/// How a call of a [`Tool::with_reply`] tool ends: with its output, or asking for input first.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Done.
    Done(Output),
    /// Not done: asks for input (the user, the client's model, its roots) under keys of its
    /// choosing. The host gets the answers and calls the tool again, in a fresh instance,
    /// with them ([`CallContext::answer`]) and `state` ([`CallContext::request_state`]).
    Ask {
        /// The requests, by key.
        requests: Vec<(String, Ask)>,
        /// What the tool needs to carry on.
        state: Option<String>,
    },
}

/// One thing a tool asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    /// The MCP method: `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its params.
    pub params: serde_json::Value,
}

impl Ask {
    /// Asks the user, with `message`, for an object of `schema` (a flat JSON Schema object).
    pub fn user(message: &str, schema: serde_json::Value) -> Self {
        Self {
            method: "elicitation/create".into(),
            params: serde_json::json!({ "message": message, "requestedSchema": schema }),
        }
    }

    /// Asks the client's model to answer `prompt`, in at most `max_tokens`.
    pub fn model(prompt: &str, max_tokens: u32) -> Self {
        Self {
            method: "sampling/createMessage".into(),
            params: serde_json::json!({
                "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
                "maxTokens": max_tokens,
            }),
        }
    }

    /// Asks which directories the client works in.
    pub fn roots() -> Self {
        Self {
            method: "roots/list".into(),
            params: serde_json::json!({}),
        }
    }
}

/// What a tool says about its own behaviour, for clients that show it or decide by it (MCP's
/// tool annotations). Hints only: they grant and restrict nothing. Set them with the
/// [`Tool`] methods of the same names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Annotations {
    /// The tool changes nothing in its environment.
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite something.
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    pub idempotent: Option<bool>,
    /// The tool reaches an open world (the web, other people's systems).
    pub open_world: Option<bool>,
}

/// One tool of a component: its name, its description, its schemas and its function.
///
/// Build it with [`Tool::new`] (or [`Tool::with_context`] when the function needs the
/// [`CallContext`]); the JSON schemas come from the argument and result types.
pub struct Tool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) capabilities: Vec<(Capability, String)>,
    pub(crate) title: Option<String>,
    pub(crate) annotations: Annotations,
    input_schema: fn() -> Schema,
    output_schema: fn() -> Schema,
    handler: Handler,
}

impl Tool {
    /// A tool named `name` (what the model calls it by: letters, digits, `_` and `-`, at most
    /// 64) that runs `function`. `description` tells the model what the tool does and when to
    /// use it.
    ///
    /// The arguments type `A` must deserialize from a JSON object (a struct); its
    /// [`JsonSchema`] becomes the tool's input schema, with its doc comments as field
    /// descriptions. The result type `R` is serialized to JSON; a string is returned as plain
    /// text; `()` (a tool that only acts) returns nothing, which the host reports to the model
    /// as `Success`.
    pub fn new<A, R, F>(name: &str, description: &str, function: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: Serialize + JsonSchema,
        F: Fn(A) -> Result<R, ToolError> + 'static,
    {
        Self::with_context(name, description, move |args: A, _: &CallContext| {
            function(args)
        })
    }

    /// Like [`Tool::new`], for a function that also reads the [`CallContext`].
    pub fn with_context<A, R, F>(name: &str, description: &str, function: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: Serialize + JsonSchema,
        F: Fn(A, &CallContext) -> Result<R, ToolError> + 'static,
    {
        // Nothing here builds a schema: the component makes its tools at every call, and a
        // schema costs about a microsecond each.
        let handler = move |arguments: &str, context: &CallContext| {
            let args: A = parse(arguments)?;
            render_result(&function(args, context)?).map(Reply::Done)
        };
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            capabilities: Vec::new(),
            title: None,
            annotations: Annotations::default(),
            input_schema: schema_for::<A>,
            output_schema: schema_for::<R>,
            handler: Box::new(handler),
        }
    }

    /// A tool whose function returns an [`Output`]: text, images, audio, resources, in any
    /// mix. It declares no output schema.
    pub fn with_output<A, F>(name: &str, description: &str, function: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + 'static,
        F: Fn(A, &CallContext) -> Result<Output, ToolError> + 'static,
    {
        Self::with_reply(name, description, move |args: A, context: &CallContext| {
            function(args, context).map(Reply::Done)
        })
    }

    /// A tool that may ask for input before it finishes ([`Reply::Ask`]). It declares no
    /// output schema.
    pub fn with_reply<A, F>(name: &str, description: &str, function: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        F: Fn(A, &CallContext) -> Result<Reply, ToolError> + 'static,
    {
        let handler = move |arguments: &str, context: &CallContext| {
            let args: A = parse(arguments)?;
            function(args, context)
        };
        Self {
            handler: Box::new(handler),
            ..Self::with_context(name, description, |_: A, _: &CallContext| Ok(()))
        }
    }

    /// Gives the tool a short title for people (a client's list of tools).
    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.to_owned());
        self
    }

    /// Says the tool changes nothing in its environment.
    pub fn read_only(mut self) -> Self {
        self.annotations.read_only = Some(true);
        self
    }

    /// Says whether the tool may destroy or overwrite something.
    pub fn destructive(mut self, destructive: bool) -> Self {
        self.annotations.destructive = Some(destructive);
        self
    }

    /// Says calling the tool again with the same arguments has no further effect.
    pub fn idempotent(mut self) -> Self {
        self.annotations.idempotent = Some(true);
        self
    }

    /// Says whether the tool reaches an open world (the web) or only a closed one.
    pub fn open_world(mut self, open_world: bool) -> Self {
        self.annotations.open_world = Some(open_world);
        self
    }

    /// Asks for a capability, with the reason shown to whoever grants it.
    pub fn requests(mut self, capability: Capability, reason: &str) -> Self {
        self.capabilities.push((capability, reason.to_owned()));
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The JSON Schema of the arguments, as the host receives it.
    pub fn input_schema(&self) -> serde_json::Value {
        (self.input_schema)().to_value()
    }

    /// The JSON Schema of the result; `None` when the tool returns nothing.
    pub fn output_schema(&self) -> Option<serde_json::Value> {
        let schema = (self.output_schema)();
        (!is_nothing(&schema)).then(|| schema.to_value())
    }

    /// Runs the tool on `arguments` (a JSON object as text), as the host would.
    pub fn call(&self, arguments: &str, context: &CallContext) -> Result<Reply, ToolError> {
        (self.handler)(arguments, context)
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

/// The arguments as the tool's type, or an invalid-arguments error that shows what to send
/// (built from the schema only then: a call that parses builds none).
fn parse<A: DeserializeOwned + JsonSchema>(arguments: &str) -> Result<A, ToolError> {
    serde_json::from_str(arguments).map_err(|error| {
        let schema = schema_for::<A>().to_value();
        ToolError::invalid_arguments(format_args!("{error}; send {}", example_arguments(&schema)))
    })
}

/// A schema with every subschema inlined (small models follow `$ref`s poorly) and without the
/// `$schema` and `title` keys, which only add tokens to every request.
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

/// Whether `R` can only be "nothing": `()` or a unit struct, whose schema is `null` alone.
/// (An `Option` that is `None` is a value, and is returned as `null`.)
fn returns_nothing<R: JsonSchema>() -> bool {
    is_nothing(&schema_for::<R>())
}

fn is_nothing(schema: &Schema) -> bool {
    schema.get("type") == Some(&serde_json::Value::from("null"))
}

/// The arguments a schema asks for, as a model should write them, with a placeholder for each
/// value: `{"a": <number>, "b": <number>}` (the optional ones after the required ones, in
/// brackets).
fn example_arguments(schema: &serde_json::Value) -> String {
    let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
        return "a JSON object".to_owned();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let placeholder = |property: &serde_json::Value| {
        let types: Vec<&str> = match property.get("type") {
            Some(serde_json::Value::String(t)) => vec![t.as_str()],
            Some(serde_json::Value::Array(ts)) => ts.iter().filter_map(|t| t.as_str()).collect(),
            _ => Vec::new(),
        };
        match types.iter().find(|t| **t != "null") {
            Some(&"number") => "<number>",
            Some(&"integer") => "<whole number>",
            Some(&"string") => "<text>",
            Some(&"boolean") => "<true or false>",
            Some(&"array") => "[...]",
            Some(&"object") => "{...}",
            _ => "<value>",
        }
    };
    let field = |(name, property): (&String, &serde_json::Value)| {
        format!("\"{name}\": {}", placeholder(property))
    };
    let given: Vec<String> = properties
        .iter()
        .filter(|(name, _)| required.contains(&name.as_str()))
        .map(field)
        .collect();
    let optional: Vec<String> = properties
        .iter()
        .filter(|(name, _)| !required.contains(&name.as_str()))
        .map(field)
        .collect();
    let mut text = format!("{{{}}}", given.join(", "));
    if !optional.is_empty() {
        text.push_str(&format!(" (optionally also {})", optional.join(", ")));
    }
    text
}

/// The result as the host receives it: a string as plain text, "nothing" (`()`, a unit struct)
/// as no parts at all, anything else as JSON, both as text and as structured content (an
/// `Option` that is `None` as `null`).
fn render_result<R: Serialize + JsonSchema>(result: &R) -> Result<Output, ToolError> {
    match serde_json::to_value(result) {
        Ok(serde_json::Value::String(text)) => Ok(Output::text(text)),
        Ok(serde_json::Value::Null) if returns_nothing::<R>() => Ok(Output::default()),
        Ok(value) => Ok(Output {
            content: vec![Content::Text(value.to_string())],
            structured: Some(value),
        }),
        Err(error) => Err(ToolError::failed(format_args!(
            "the result could not be serialized: {error}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use serde::Deserialize;

    /// Arguments of the test tool.
    #[derive(Deserialize, JsonSchema)]
    struct Pair {
        /// The first number.
        a: f64,
        /// The second number.
        b: f64,
    }

    fn text_of(reply: &Reply) -> String {
        match reply {
            Reply::Done(output) => output.text_parts(),
            Reply::Ask { .. } => "(asks)".to_owned(),
        }
    }

    fn add_tool() -> Tool {
        Tool::new("add", "Adds two numbers.", |p: Pair| Ok(p.a + p.b))
    }

    #[test]
    fn schema_comes_from_the_argument_type() {
        let schema = add_tool().input_schema();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["a"]["type"], "number");
        assert_eq!(
            schema["properties"]["a"]["description"],
            "The first number."
        );
        assert_eq!(schema["required"], serde_json::json!(["a", "b"]));
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    }

    #[test]
    fn call_deserializes_and_serializes() {
        let out = add_tool().call(r#"{"a": 1.5, "b": 2}"#, &CallContext::default());
        let Ok(Reply::Done(out)) = out else {
            panic!("{out:?}")
        };
        assert_eq!(out.text_parts(), "3.5");
        assert_eq!(out.structured, Some(serde_json::json!(3.5)));
    }

    #[test]
    fn bad_arguments_are_invalid_arguments() {
        let out = add_tool().call(r#"{"a": 1}"#, &CallContext::default());
        match out {
            Err(ToolError::InvalidArguments(message)) => {
                assert!(message.contains("`b`"), "{message}");
                assert!(
                    message.contains(r#"send {"a": <number>, "b": <number>}"#),
                    "{message}"
                );
            }
            other => panic!("expected invalid arguments, got {other:?}"),
        }
    }

    #[test]
    fn a_tool_that_returns_nothing_sends_nothing() {
        let tool = Tool::new("forget", "Forgets.", |_: Pair| Ok(()));
        assert_eq!(
            tool.call(r#"{"a":0,"b":0}"#, &CallContext::default()),
            Ok(Reply::Done(Output::default())),
            "not `null`: the host says `Success` to the model"
        );
        assert_eq!(tool.output_schema(), None);
        // `None` of an `Option` is a value the tool returned.
        let tool = Tool::new("find", "Finds.", |_: Pair| Ok(None::<String>));
        assert_eq!(
            tool.call(r#"{"a":0,"b":0}"#, &CallContext::default())
                .map(|r| text_of(&r)),
            Ok("null".to_owned())
        );
        assert!(tool.output_schema().is_some());
        assert_eq!(add_tool().output_schema().unwrap()["type"], "number");
    }

    /// How many schemas of [`Counted`] were built.
    static COUNTED_SCHEMAS: AtomicUsize = AtomicUsize::new(0);

    /// A type that counts the schemas built of it.
    #[derive(Deserialize, Serialize)]
    struct Counted {
        n: u32,
    }

    impl JsonSchema for Counted {
        fn schema_name() -> std::borrow::Cow<'static, str> {
            "Counted".into()
        }

        fn json_schema(_: &mut schemars::SchemaGenerator) -> Schema {
            COUNTED_SCHEMAS.fetch_add(1, Ordering::Relaxed);
            schemars::json_schema!({
                "type": "object",
                "properties": { "n": { "type": "integer" } },
                "required": ["n"]
            })
        }
    }

    #[test]
    fn a_call_builds_no_schema_unless_the_arguments_are_wrong() {
        // A component makes its tools at every call: a schema there is paid at every call.
        let schemas = || COUNTED_SCHEMAS.load(Ordering::Relaxed);
        let tool = Tool::new("next", "Counts on.", |c: Counted| {
            Ok(Counted { n: c.n + 1 })
        });
        for _ in 0..3 {
            assert_eq!(
                tool.call(r#"{"n": 1}"#, &CallContext::default())
                    .map(|r| text_of(&r)),
                Ok(r#"{"n":2}"#.to_owned())
            );
        }
        assert_eq!(schemas(), 0);
        // Wrong arguments: the error shows what to send, from the schema.
        let wrong = tool.call(r#"{"n": "one"}"#, &CallContext::default());
        assert!(
            matches!(&wrong, Err(ToolError::InvalidArguments(m)) if m.contains(r#"send {"n": <whole number>}"#)),
            "{wrong:?}"
        );
        assert!(schemas() > 0);
    }

    #[test]
    fn strings_are_returned_as_plain_text() {
        let tool = Tool::with_context("who", "Says who calls.", |_: Pair, ctx: &CallContext| {
            Ok(format!("user {}", ctx.get("user").unwrap_or("nobody")))
        });
        let ctx = CallContext {
            call_id: "1".into(),
            values: vec![("user".into(), "ada".into())],
            ..CallContext::default()
        };
        assert_eq!(
            tool.call(r#"{"a":0,"b":0}"#, &ctx),
            Ok(Reply::Done(Output::text("user ada")))
        );
    }
}
