//! What a component offers besides tools (MCP's resources and prompts): implement [`Offers`]
//! and pass it to [`export!`](crate::export) with `offers = ...`.
//!
//! Listing runs with nothing granted (like `describe`); reading a resource and filling in a
//! prompt run like a call, in a fresh instance with the component's grants.

use crate::output::ResourceContents;
use crate::tool::{Ask, CallContext};

/// A resource with a fixed URI.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resource {
    /// Its URI, such as `notes://todo`.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A short name for people.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its media type, when known.
    pub mime_type: Option<String>,
}

/// A family of resources named by a URI template (RFC 6570), such as `notes://{title}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A short name for people.
    pub title: Option<String>,
    /// What its resources are.
    pub description: Option<String>,
    /// Their media type, when known.
    pub mime_type: Option<String>,
}

/// One resource read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// The URI of what was read.
    pub uri: String,
    /// Its media type, when known.
    pub mime_type: Option<String>,
    /// What it holds.
    pub body: ResourceContents,
}

/// Why a read gave nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// No resource has that URI; say which URIs there are.
    NotFound(String),
    /// It exists and could not be read; say why.
    Failed(String),
}

/// One argument a prompt takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is, for whoever fills it in.
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// A prompt the component offers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    /// Its name, unique among the component's prompts.
    pub name: String,
    /// A short name for people.
    pub title: Option<String>,
    /// What it is for.
    pub description: Option<String>,
    /// The arguments it takes.
    pub arguments: Vec<PromptArgument>,
}

/// Who says a message of a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// What a message of a prompt holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Text.
    Text(String),
    /// An image: its bytes and media type.
    Image {
        /// The raw bytes.
        data: Vec<u8>,
        /// Such as `image/png`.
        mime_type: String,
    },
    /// A sound.
    Audio {
        /// The raw bytes.
        data: Vec<u8>,
        /// Such as `audio/wav`.
        mime_type: String,
    },
    /// A text resource.
    Resource {
        /// Its URI.
        uri: String,
        /// Its media type, when known.
        mime_type: Option<String>,
        /// Its text.
        text: String,
    },
}

/// One message of a filled-in prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who says it.
    pub role: Role,
    /// What it holds.
    pub part: Part,
}

/// A prompt filled in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filled {
    /// What the filled-in prompt is, when it says.
    pub description: Option<String>,
    /// Its messages, in order.
    pub messages: Vec<Message>,
}

/// How filling in a prompt ends: filled in, or asking for input first (the host gets the
/// answers and calls again with them in the [`CallContext`], as for a tool's
/// [`Reply::Ask`](crate::Reply::Ask)).
#[derive(Debug, Clone, PartialEq)]
pub enum PromptReply {
    /// Filled in.
    Done(Filled),
    /// Asks first, under keys of its choosing, with a state it gets back.
    Ask {
        /// The requests, by key.
        requests: Vec<(String, Ask)>,
        /// What it needs to carry on.
        state: Option<String>,
    },
}

/// Why a prompt could not be filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptError {
    /// No prompt has that name, or an argument is missing or wrong; say which.
    InvalidArguments(String),
    /// It could not be made; say why.
    Failed(String),
}

/// What a component offers besides its tools. Every method has a default that offers
/// nothing, so implement only what the component has.
pub trait Offers {
    /// The resources with fixed URIs. Called with nothing granted.
    fn resources() -> Vec<Resource> {
        Vec::new()
    }

    /// The URI templates of the resources made on request. Called with nothing granted.
    fn templates() -> Vec<ResourceTemplate> {
        Vec::new()
    }

    /// Reads the resource with `uri` (a listed one, or one a template describes).
    fn read(uri: &str) -> Result<Vec<Contents>, ReadError> {
        Err(ReadError::NotFound(format!(
            "no resource has the URI {uri}; this component offers none"
        )))
    }

    /// The prompts. Called with nothing granted.
    fn prompts() -> Vec<Prompt> {
        Vec::new()
    }

    /// Fills in prompt `name` with `arguments` (name, value); `context` has the answers when
    /// it asked for input before.
    fn get_prompt(
        name: &str,
        arguments: &[(String, String)],
        context: &CallContext,
    ) -> Result<PromptReply, PromptError> {
        let _ = (arguments, context);
        Err(PromptError::InvalidArguments(format!(
            "no prompt is called `{name}`; this component offers none"
        )))
    }

    /// Values that complete `value` for argument `argument` of prompt `name`, best first.
    fn complete(name: &str, argument: &str, value: &str) -> Vec<String> {
        let _ = (name, argument, value);
        Vec::new()
    }
}

/// A component's [`Offers`] when it offers nothing besides tools.
#[doc(hidden)]
pub struct Nothing;

impl Offers for Nothing {}
