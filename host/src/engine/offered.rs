//! What a 0.2 component offers besides tools: listing its resources, templates and prompts
//! (with nothing granted, like `describe`), reading a resource, filling in a prompt and
//! completing a prompt's argument (each in a fresh instance with the component's grants and
//! limits, like a call).

use std::collections::BTreeMap;

use wasmtime::Store;

use super::bindings::{ToolInstance, ToolInstancePre, wit, wit_prompts, wit_resources};
use super::call::{ExportValue, run};
use super::result;
use super::runtime::Runtime;
use crate::content::{self, ContentPart, EmbeddedResource, Media};
use crate::error::CallError;
use crate::offers::{
    FilledPrompt, OfferError, Offers, Prompt, PromptArgument, PromptInput, PromptMessage,
    PromptOutcome, Resource, ResourceContents, ResourceTemplate, Role,
};
use crate::sandbox::Sandbox;
use crate::sandbox::store::StoreState;

/// At most this many completions are passed on (MCP's limit).
const MAX_COMPLETIONS: usize = 100;

impl ExportValue for Offers {
    fn is_tool_error(&self) -> bool {
        false
    }
}

impl ExportValue for Vec<String> {
    fn is_tool_error(&self) -> bool {
        false
    }
}

impl ExportValue for Result<Vec<wit_resources::Contents>, wit_resources::ReadError> {
    fn is_tool_error(&self) -> bool {
        self.is_err()
    }
}

impl ExportValue for Result<wit_prompts::Outcome, wit_prompts::PromptError> {
    fn is_tool_error(&self) -> bool {
        self.is_err()
    }
}

/// Lists what the component offers: what `pre` exports of `resources` and `prompts`.
pub(crate) async fn list(
    runtime: &Runtime,
    pre: &ToolInstancePre,
    sandbox: &Sandbox,
) -> Result<Offers, CallError> {
    let (resources, prompts) = pre.offers();
    if !resources && !prompts {
        return Ok(Offers::default());
    }
    let body = async |instance: &ToolInstance, store: &mut Store<StoreState>| {
        let mut offers = Offers::default();
        if resources {
            let exports = instance.resources(store)?;
            let exports = exports.toolhost_tool_resources();
            offers.resources = exports
                .call_listed(&mut *store)
                .await?
                .into_iter()
                .map(resource)
                .collect();
            offers.templates = exports
                .call_templates(&mut *store)
                .await?
                .into_iter()
                .map(template)
                .collect();
        }
        if prompts {
            let exports = instance.prompts(store)?;
            offers.prompts = exports
                .toolhost_tool_prompts()
                .call_listed(&mut *store)
                .await?
                .into_iter()
                .map(prompt)
                .collect();
        }
        Ok(offers)
    };
    run(
        runtime,
        pre,
        sandbox,
        "listing resources and prompts",
        body,
        None,
        None,
    )
    .await
    .0
}

/// Reads the resource `uri`.
pub(crate) async fn read(
    runtime: &Runtime,
    pre: &ToolInstancePre,
    sandbox: &Sandbox,
    uri: &str,
) -> Result<Vec<ResourceContents>, OfferError> {
    let body = async |instance: &ToolInstance, store: &mut Store<StoreState>| {
        let exports = instance.resources(store)?;
        exports
            .toolhost_tool_resources()
            .call_read(&mut *store, uri)
            .await
    };
    let (result, _, _) = run(runtime, pre, sandbox, uri, body, None, None).await;
    match result.map_err(failed)? {
        Ok(contents) => {
            let size: usize = contents.iter().map(body_size).sum();
            sandbox.limits.check_result(uri, size).map_err(failed)?;
            Ok(contents.into_iter().map(contents_of).collect())
        }
        Err(wit_resources::ReadError::NotFound(message)) => Err(OfferError::NotFound(message)),
        Err(wit_resources::ReadError::Failed(message)) => Err(OfferError::Failed(message)),
    }
}

/// Fills in prompt `name` with `arguments`, and what an earlier round that asked for input
/// left (`input`). A request for input is checked as a tool's is (1 to 16 requests of the
/// methods a tool may ask with, a state within 64 KiB, all within the component's
/// `max_result`).
pub(crate) async fn get(
    runtime: &Runtime,
    pre: &ToolInstancePre,
    sandbox: &Sandbox,
    name: &str,
    arguments: &BTreeMap<String, String>,
    input: &PromptInput,
) -> Result<PromptOutcome, OfferError> {
    let arguments: Vec<(String, String)> = arguments.clone().into_iter().collect();
    let context = wit_prompts::Context {
        input_responses: input
            .input_responses
            .iter()
            .map(|(key, answer)| (key.clone(), answer.to_string()))
            .collect(),
        request_state: input.request_state.clone(),
    };
    let body = async |instance: &ToolInstance, store: &mut Store<StoreState>| {
        let exports = instance.prompts(store)?;
        exports
            .toolhost_tool_prompts()
            .call_get(&mut *store, name, &arguments, &context)
            .await
    };
    let (result, _, _) = run(runtime, pre, sandbox, name, body, None, None).await;
    match result.map_err(failed)? {
        Ok(wit_prompts::Outcome::Complete(filled)) => filled_of(filled)
            .map(PromptOutcome::Filled)
            .map_err(OfferError::Failed),
        Ok(wit_prompts::Outcome::InputRequired(asked)) => {
            // The same request as a tool's, checked by the same rules.
            let asked = wit::InputRequired {
                requests: asked
                    .requests
                    .into_iter()
                    .map(|(key, request)| {
                        let request = wit::InputRequest {
                            method: request.method,
                            params: request.params,
                        };
                        (key, request)
                    })
                    .collect(),
                state: asked.state,
            };
            result::input_required(name, asked, &sandbox.limits)
                .map(PromptOutcome::InputRequired)
                .map_err(failed)
        }
        Err(wit_prompts::PromptError::InvalidArguments(message)) => {
            Err(OfferError::InvalidArguments(message))
        }
        Err(wit_prompts::PromptError::Failed(message)) => Err(OfferError::Failed(message)),
    }
}

/// Completions of `value` for argument `argument` of prompt `name`.
pub(crate) async fn complete(
    runtime: &Runtime,
    pre: &ToolInstancePre,
    sandbox: &Sandbox,
    name: &str,
    argument: &str,
    value: &str,
) -> Result<Vec<String>, OfferError> {
    let body = async |instance: &ToolInstance, store: &mut Store<StoreState>| {
        let exports = instance.prompts(store)?;
        exports
            .toolhost_tool_prompts()
            .call_complete(&mut *store, name, argument, value)
            .await
    };
    let (result, _, _) = run(runtime, pre, sandbox, name, body, None, None).await;
    let mut values = result.map_err(failed)?;
    values.truncate(MAX_COMPLETIONS);
    Ok(values)
}

fn failed(error: CallError) -> OfferError {
    OfferError::Failed(error.to_string())
}

fn resource(r: wit_resources::Resource) -> Resource {
    Resource {
        uri: r.uri,
        name: r.name,
        title: r.title,
        description: r.description,
        mime_type: r.mime_type,
    }
}

fn template(t: wit_resources::ResourceTemplate) -> ResourceTemplate {
    ResourceTemplate {
        uri_template: t.uri_template,
        name: t.name,
        title: t.title,
        description: t.description,
        mime_type: t.mime_type,
    }
}

fn prompt(p: wit_prompts::Prompt) -> Prompt {
    Prompt {
        name: p.name,
        title: p.title,
        description: p.description,
        arguments: p
            .arguments
            .into_iter()
            .map(|a| PromptArgument {
                name: a.name,
                description: a.description,
                required: a.required,
            })
            .collect(),
    }
}

fn body_size(contents: &wit_resources::Contents) -> usize {
    contents.uri.len()
        + match &contents.body {
            wit_resources::Body::Text(text) => text.len(),
            wit_resources::Body::Blob(bytes) => bytes.len().div_ceil(3) * 4,
        }
}

fn contents_of(contents: wit_resources::Contents) -> ResourceContents {
    let (text, blob) = match contents.body {
        wit_resources::Body::Text(text) => (Some(text), None),
        wit_resources::Body::Blob(bytes) => (None, Some(content::encode(&bytes))),
    };
    EmbeddedResource {
        uri: contents.uri,
        mime_type: contents.mime_type,
        text,
        blob,
    }
}

/// A filled-in prompt as the host carries it, or what is wrong with one of its messages.
fn filled_of(filled: wit_prompts::Filled) -> Result<FilledPrompt, String> {
    let media = |media: wit_prompts::Media, kind: &str| {
        content::check_mime_type(&media.mime_type, kind)?;
        Ok::<_, String>(Media {
            mime_type: media.mime_type,
            data: content::encode(&media.data),
        })
    };
    let messages = filled
        .messages
        .into_iter()
        .enumerate()
        .map(|(at, message)| {
            let content = match message.part {
                wit_prompts::Part::Text(text) => ContentPart::Text { text },
                wit_prompts::Part::Image(image) => match media(image, "image") {
                    Ok(image) => ContentPart::Image(image),
                    Err(problem) => return Err(format!("message {at} of the prompt {problem}")),
                },
                wit_prompts::Part::Audio(audio) => match media(audio, "audio") {
                    Ok(audio) => ContentPart::Audio(audio),
                    Err(problem) => return Err(format!("message {at} of the prompt {problem}")),
                },
                wit_prompts::Part::Resource(resource) => ContentPart::Resource(EmbeddedResource {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    text: Some(resource.text),
                    blob: None,
                }),
            };
            let role = match message.role {
                wit_prompts::Role::User => Role::User,
                wit_prompts::Role::Assistant => Role::Assistant,
            };
            Ok(PromptMessage { role, content })
        })
        .collect::<Result<Vec<_>, String>>();
    Ok(FilledPrompt {
        description: filled.description,
        messages: messages?,
    })
}
