//! What a source offers besides tools: resources (read by URI) and prompts (filled in with
//! arguments), as tool contract 0.2's optional `resources` and `prompts` interfaces and MCP
//! have them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::content::{ContentPart, EmbeddedResource, InputRequired};

/// A resource with a fixed URI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A short name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A family of resources named by a URI template, such as `notes://{title}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceTemplate {
    /// The URI template (RFC 6570; `{name}` matches one path segment or more text without `/`).
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A short name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What its resources are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Their media type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl ResourceTemplate {
    /// Whether `uri` is one of the template's resources: its literal text matches, and each
    /// `{variable}` stands for at least one character that is not `/`.
    pub fn matches(&self, uri: &str) -> bool {
        matches_template(&self.uri_template, uri)
    }
}

fn matches_template(template: &str, uri: &str) -> bool {
    match template.find('{') {
        None => template == uri,
        Some(open) => {
            let (literal, rest) = template.split_at(open);
            let Some(after) = uri.strip_prefix(literal) else {
                return false;
            };
            let Some(close) = rest.find('}') else {
                return false;
            };
            let rest = &rest[close + 1..];
            // The variable takes 1..n characters up to the next `/`; try each end.
            let most = after.find('/').unwrap_or(after.len());
            (1..=most).any(|end| matches_template(rest, &after[end..]))
        }
    }
}

/// An argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the prompt needs it.
    #[serde(default)]
    pub required: bool,
}

/// A prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    /// Its name.
    pub name: String,
    /// A short name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

/// Who says a prompt's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a filled-in prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What it holds: text, an image, a sound or a text resource.
    pub content: ContentPart,
}

/// A prompt filled in with its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilledPrompt {
    /// What it is, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its messages.
    pub messages: Vec<PromptMessage>,
}

/// How filling in a prompt ended that did not fail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptOutcome {
    /// Filled in.
    Filled(FilledPrompt),
    /// Asking for input first (contract 0.2's `input-required`, as a tool's call may): whoever
    /// serves the prompt gets the answers and fills it in again with a [`PromptInput`].
    InputRequired(InputRequired),
}

/// What an earlier round of filling in a prompt left, when the prompt asked for input (as
/// [`CallContext`](crate::CallContext) has it for a call); empty in a first round.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptInput {
    /// The answers, by the keys of the prompt's requests.
    pub input_responses: BTreeMap<String, serde_json::Value>,
    /// The state the prompt gave with its request for input, as it gave it.
    pub request_state: Option<String>,
}

/// What a source offers besides tools, as listed when it was loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offers {
    /// Resources with fixed URIs.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// Resource templates.
    #[serde(default)]
    pub templates: Vec<ResourceTemplate>,
    /// Prompts.
    #[serde(default)]
    pub prompts: Vec<Prompt>,
}

impl Offers {
    /// Whether it offers nothing.
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.templates.is_empty() && self.prompts.is_empty()
    }

    /// Whether `uri` names one of its resources (listed, or of a template).
    pub fn has_resource(&self, uri: &str) -> bool {
        self.resources.iter().any(|r| r.uri == uri) || self.templates.iter().any(|t| t.matches(uri))
    }

    /// Whether it has a prompt called `name`.
    pub fn has_prompt(&self, name: &str) -> bool {
        self.prompts.iter().any(|p| p.name == name)
    }
}

/// Why reading a resource or filling in a prompt gave nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OfferError {
    /// No resource has that URI, or no prompt that name.
    #[error("{0}")]
    NotFound(String),
    /// The arguments of a prompt are missing or wrong.
    #[error("{0}")]
    InvalidArguments(String),
    /// It exists and could not be read or filled in.
    #[error("{0}")]
    Failed(String),
}

/// The contents of a resource read.
pub type ResourceContents = EmbeddedResource;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_a_segment_per_variable() {
        let template = ResourceTemplate {
            uri_template: "test://template/{id}/data".into(),
            name: "t".into(),
            title: None,
            description: None,
            mime_type: None,
        };
        assert!(template.matches("test://template/123/data"));
        assert!(!template.matches("test://template//data"));
        assert!(!template.matches("test://template/1/2/data"));
        assert!(!template.matches("test://template/123/datum"));
        assert!(matches_template("notes://{title}", "notes://todo"));
        assert!(!matches_template("notes://{title}", "notes://"));
        assert!(matches_template("a/{x}-{y}", "a/1-2"));
    }
}
