//! Where tools come from. A [`ToolSource`] offers tools and runs them; the
//! [`Toolbox`](crate::toolbox::Toolbox) puts the tools of every source under one set of unique names,
//! checks arguments against the schemas, and routes each call to its source.
//!
//! Three kinds come with toolhost: sandboxed WebAssembly components
//! ([`LoadedComponent`](crate::engine::component::LoadedComponent)), MCP servers
//! ([`McpClient`](crate::mcp::client::McpClient)) and native Rust functions of the embedding
//! application ([`NativeTools`](crate::native_tools::NativeTools)); an application can add its own. Only
//! components are sandboxed: every other source runs with the authority of whatever runs it
//! (an MCP server as the user who started the host, a native function inside the host
//! process), which [`Origin::is_sandboxed`] says.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::arguments::Arguments;
use crate::asking::Asker;
use crate::caller::Caller;
use crate::content::{ContentPart, InputRequired, Media};
use crate::error::{CallError, LoadError};
use crate::offers::{OfferError, Offers, PromptInput, PromptOutcome, ResourceContents};
use crate::sandbox::{CapturedLog, Grants, Observer, ReportCounts};
use crate::spec::ToolSpec;

/// A source of tools.
pub trait ToolSource: Send + Sync {
    /// What the source is, for messages, `host tools` and audit records.
    fn origin(&self) -> &Origin;

    /// The tools it offers, under its own names.
    fn tools(&self) -> Vec<ToolSpec>;

    /// Runs its tool `tool` with `arguments`, which the toolbox has checked against the
    /// tool's input schema.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Arguments,
        context: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, CallError>>;

    /// What the source's tools are granted, for a sandboxed source.
    fn grants(&self) -> Option<&Grants> {
        None
    }

    /// A number that changes whenever the source's list of tools changes (an MCP server's
    /// `tools/list_changed`), so the toolbox knows to list them again. Constant by default.
    fn generation(&self) -> u64 {
        0
    }

    /// Where to wait for the source's list of tools to change: a channel whose value (the
    /// [`generation`](Self::generation)) moves once a changed list has been taken in (an MCP
    /// server's `tools/list_changed`, listed again), so that [`tools`](Self::tools) has it.
    /// `None` by default: the list never changes.
    fn tool_changes(&self) -> Option<watch::Receiver<u64>> {
        None
    }

    /// Brings [`tools`](Self::tools) up to date when the source knows its tools changed
    /// (an MCP server said so, and they have not been listed again yet). The loop awaits it
    /// before each model turn, so a change announced during a turn shows in the next one.
    /// Never fails: a source that cannot list its tools keeps the old list and logs why.
    fn refresh(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// What the source offers besides tools (resources, prompts), if anything.
    fn offers(&self) -> Option<&Offers> {
        None
    }

    /// Reads its resource `uri` for `caller` (whose directories per caller the read gets, as
    /// its calls do; none without one).
    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, OfferError>> {
        Box::pin(async move { Err(OfferError::NotFound(format!("no resource {uri}"))) })
    }

    /// Fills in its prompt `name` with `arguments` for `caller`; `input` has the answers when
    /// an earlier round asked for input. A prompt may ask for input, as a tool may.
    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        _arguments: &'a BTreeMap<String, String>,
        _input: &'a PromptInput,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<PromptOutcome, OfferError>> {
        Box::pin(async move { Err(OfferError::NotFound(format!("no prompt {name}"))) })
    }

    /// Values completing `value` for argument `argument` of its prompt `prompt`, for
    /// `caller`.
    fn complete<'a>(
        &'a self,
        _prompt: &'a str,
        _argument: &'a str,
        _value: &'a str,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<String>, OfferError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Stops what the source runs (an MCP server's process), politely, before the host
    /// exits. A source that is dropped without it stops at once (a server's process group
    /// is killed).
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// A WebAssembly component, run sandboxed.
    Component {
        /// Its name (the manifest key, or the file stem).
        name: String,
        /// The component file.
        path: PathBuf,
        /// The SHA-256 of the file, hex.
        sha256: String,
    },
    /// An MCP server. Not sandboxed: it runs with its own authority.
    Mcp {
        /// Its name in the manifest.
        name: String,
        /// The command it runs as, or its URL.
        endpoint: String,
    },
    /// Functions of the embedding application, run in its process. Not sandboxed.
    Native {
        /// The name the application gave them.
        name: String,
    },
}

impl Origin {
    /// The source's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Component { name, .. } | Self::Mcp { name, .. } | Self::Native { name } => name,
        }
    }

    /// Whether its tools run in the sandbox (only components' do).
    pub fn is_sandboxed(&self) -> bool {
        matches!(self, Self::Component { .. })
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Component { name, path, .. } => {
                write!(f, "component `{name}` ({})", path.display())
            }
            Self::Mcp { name, .. } => write!(f, "MCP server `{name}`"),
            Self::Native { name } => write!(f, "native tools `{name}`"),
        }
    }
}

/// Which of a source's tools a toolbox offers, and under which names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceOptions {
    /// Put ahead of every tool's name (`"time_"` turns `get_current_time` into
    /// `time_get_current_time`), to keep names unique across sources.
    #[serde(default)]
    pub prefix: String,
    /// Offer only these tools (by the source's names); every tool when absent.
    #[serde(default, rename = "tools")]
    pub include: Option<BTreeSet<String>>,
    /// Never offer these tools (by the source's names).
    #[serde(default)]
    pub exclude: BTreeSet<String>,
    /// Offer only these of its resources (by URI, or a template's URI template); every one
    /// when absent.
    #[serde(default)]
    pub resources: Option<BTreeSet<String>>,
    /// Never offer these resources.
    #[serde(default)]
    pub exclude_resources: BTreeSet<String>,
    /// Offer only these of its prompts (by name); every one when absent.
    #[serde(default)]
    pub prompts: Option<BTreeSet<String>>,
    /// Never offer these prompts.
    #[serde(default)]
    pub exclude_prompts: BTreeSet<String>,
}

impl SourceOptions {
    /// Whether the source's tool `name` is offered.
    pub(crate) fn offers(&self, name: &str) -> bool {
        kept(self.include.as_ref(), &self.exclude, name)
    }

    /// What of `offers` (a source's resources, templates and prompts, named `origin`) these
    /// options let through; an error when a list names something it does not offer.
    pub(crate) fn keep_offers(&self, origin: &Origin, offers: Offers) -> Result<Offers, LoadError> {
        let resources: Vec<String> = (offers.resources.iter().map(|r| r.uri.clone()))
            .chain(offers.templates.iter().map(|t| t.uri_template.clone()))
            .collect();
        let prompts: Vec<String> = offers.prompts.iter().map(|p| p.name.clone()).collect();
        let lists = [
            (
                "resources",
                "resource",
                self.resources.iter().flatten(),
                &resources,
            ),
            ("prompts", "prompt", self.prompts.iter().flatten(), &prompts),
        ];
        let excluded = [
            (
                "exclude_resources",
                "resource",
                &self.exclude_resources,
                &resources,
            ),
            ("exclude_prompts", "prompt", &self.exclude_prompts, &prompts),
        ];
        let named = lists
            .into_iter()
            .flat_map(|(key, what, names, offered)| names.map(move |n| (key, what, n, offered)))
            .chain(
                excluded
                    .into_iter()
                    .flat_map(|(key, what, names, offered)| {
                        names.iter().map(move |n| (key, what, n, offered))
                    }),
            );
        for (key, what, name, offered) in named {
            if !offered.contains(name) {
                return Err(LoadError::NoSuchOffer {
                    origin: origin.to_string(),
                    key,
                    what,
                    name: name.clone(),
                    offered: offered.clone(),
                });
            }
        }
        let resource = |uri: &String| kept(self.resources.as_ref(), &self.exclude_resources, uri);
        let prompt = |name: &String| kept(self.prompts.as_ref(), &self.exclude_prompts, name);
        Ok(Offers {
            resources: (offers.resources.into_iter())
                .filter(|r| resource(&r.uri))
                .collect(),
            templates: (offers.templates.into_iter())
                .filter(|t| resource(&t.uri_template))
                .collect(),
            prompts: (offers.prompts.into_iter())
                .filter(|p| prompt(&p.name))
                .collect(),
        })
    }
}

/// Whether `name` passes an include list (everything when there is none) and an exclude list.
fn kept(include: Option<&BTreeSet<String>>, exclude: &BTreeSet<String>, name: &str) -> bool {
    include.is_none_or(|names| names.contains(name)) && !exclude.contains(name)
}

/// What the embedding application passes with a call. Delivered to the tool, never shown to
/// the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// An identifier for the call, unique within a run (the model's tool-call id when there
    /// is one).
    pub call_id: String,
    /// Key/value pairs such as a tenant or user id.
    pub values: BTreeMap<String, String>,
    /// Who gets the tool's progress reports and log lines while it runs, if anyone.
    pub observer: Option<Observer>,
    /// When the tool asked for input in an earlier round of this call: the answers, by the
    /// keys of its requests.
    pub input_responses: BTreeMap<String, serde_json::Value>,
    /// The state the tool gave with its request for input, as it gave it.
    pub request_state: Option<String>,
    /// The MCP server's task the call waits in, when it asked for input from there
    /// ([`InputRequired::task`](crate::content::InputRequired::task)): the answers go to that
    /// task, which the call follows to its end instead of calling the tool again.
    pub task: Option<String>,
    /// Who answers what is asked while the call runs (an MCP server's elicitation, say), if
    /// anyone; a request nobody can answer is declined.
    pub asker: Option<Asker>,
    /// Who made the request this call belongs to, when `host mcp` verified an access token
    /// for it; `None` for the local user (stdio, a static token, the library).
    pub caller: Option<std::sync::Arc<Caller>>,
}

/// A successful call's result, with what the tool logged.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolOutput {
    /// The result text (JSON when the tool declares an output schema): what the model reads.
    pub text: String,
    /// The result as JSON, when the source gave it as such (an MCP server's
    /// `structuredContent`); `text` then holds the same JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<serde_json::Value>,
    /// The result's parts as the source gave them (a 0.2 component, an MCP server), in order;
    /// empty when the result is `text` alone. `text` is what a model reads of them; images
    /// also go to models that accept images in tool results.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ContentPart>,
    /// Set when the tool has not finished: what it asks for first (contract 0.2). `text` and
    /// `content` are empty then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_required: Option<InputRequired>,
    /// How many progress reports and log lines the tool made while it ran (tool contract
    /// 0.2's `report`), and how many were passed on.
    #[serde(skip_serializing_if = "ReportCounts::is_none")]
    pub reports: ReportCounts,
    /// What the tool wrote to stdout.
    pub stdout: CapturedLog,
    /// What the tool wrote to stderr.
    pub stderr: CapturedLog,
    /// How long the call took, instantiation included.
    #[serde(
        rename = "duration_ms",
        serialize_with = "crate::units::serialize_millis"
    )]
    pub duration: Duration,
}

impl ToolOutput {
    /// The images among its parts.
    pub fn images(&self) -> impl Iterator<Item = &Media> {
        self.content.iter().filter_map(|part| match part {
            ContentPart::Image(image) => Some(image),
            _ => None,
        })
    }

    /// The output of a call that finished; a tool that asks for input first is an
    /// [`CallError::InputRequired`] for `asker`, who cannot ask (`host call`, a run of the
    /// loop, ...).
    pub fn finished(self, tool: &str, asker: &str) -> Result<ToolOutput, CallError> {
        match &self.input_required {
            Some(asked) => Err(CallError::input_required(tool, asked, asker)),
            None => Ok(self),
        }
    }

    /// Whether it has nothing at all: no text, no parts.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.content.is_empty()
    }

    /// A result with `text` and nothing logged.
    pub fn text(text: impl Into<String>, duration: Duration) -> Self {
        Self {
            text: text.into(),
            structured: None,
            content: Vec::new(),
            input_required: None,
            reports: ReportCounts::default(),
            stdout: CapturedLog::default(),
            stderr: CapturedLog::default(),
            duration,
        }
    }
}
