//! What the [`export!`](crate::export) macro calls for `resources` and `prompts`: an
//! [`Offers`] as the host reads it. Not part of the API.
#![allow(missing_docs)]

use crate::__private::bindings::exports::toolhost::tool::{prompts as wp, resources as wr};
use crate::offers::{Contents, Filled, Offers, Part, PromptError, PromptReply, ReadError, Role};
use crate::{CallContext, ResourceContents};

pub use wp::{
    Context as WitPromptContext, Guest as PromptsGuest, Outcome as WitPromptOutcome,
    Prompt as WitPrompt, PromptError as WitPromptError,
};
pub use wr::{
    Contents as WitContents, Guest as ResourcesGuest, ReadError as WitReadError,
    Resource as WitResource, ResourceTemplate as WitTemplate,
};

pub fn listed<O: Offers>() -> Vec<WitResource> {
    O::resources()
        .into_iter()
        .map(|r| WitResource {
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
        })
        .collect()
}

pub fn templates<O: Offers>() -> Vec<WitTemplate> {
    O::templates()
        .into_iter()
        .map(|t| WitTemplate {
            uri_template: t.uri_template,
            name: t.name,
            title: t.title,
            description: t.description,
            mime_type: t.mime_type,
        })
        .collect()
}

pub fn read<O: Offers>(uri: &str) -> Result<Vec<WitContents>, WitReadError> {
    let contents = O::read(uri).map_err(|error| match error {
        ReadError::NotFound(message) => WitReadError::NotFound(message),
        ReadError::Failed(message) => WitReadError::Failed(message),
    })?;
    Ok(contents.into_iter().map(contents_to_wit).collect())
}

fn contents_to_wit(contents: Contents) -> WitContents {
    WitContents {
        uri: contents.uri,
        mime_type: contents.mime_type,
        body: match contents.body {
            ResourceContents::Text(text) => wr::Body::Text(text),
            ResourceContents::Blob(bytes) => wr::Body::Blob(bytes),
        },
    }
}

pub fn prompts<O: Offers>() -> Vec<WitPrompt> {
    O::prompts()
        .into_iter()
        .map(|p| WitPrompt {
            name: p.name,
            title: p.title,
            description: p.description,
            arguments: p
                .arguments
                .into_iter()
                .map(|a| wp::Argument {
                    name: a.name,
                    description: a.description,
                    required: a.required,
                })
                .collect(),
        })
        .collect()
}

pub fn get<O: Offers>(
    name: &str,
    arguments: &[(String, String)],
    context: WitPromptContext,
) -> Result<WitPromptOutcome, WitPromptError> {
    let context = CallContext {
        input_responses: crate::__private::answers(context.input_responses),
        request_state: context.request_state,
        ..CallContext::default()
    };
    let reply = O::get_prompt(name, arguments, &context).map_err(|error| match error {
        PromptError::InvalidArguments(message) => WitPromptError::InvalidArguments(message),
        PromptError::Failed(message) => WitPromptError::Failed(message),
    })?;
    Ok(match reply {
        PromptReply::Done(filled) => WitPromptOutcome::Complete(filled_to_wit(filled)),
        PromptReply::Ask { requests, state } => {
            WitPromptOutcome::InputRequired(wp::InputRequired {
                requests: requests
                    .into_iter()
                    .map(|(key, ask)| {
                        let params = ask.params.to_string();
                        (
                            key,
                            wp::InputRequest {
                                method: ask.method,
                                params,
                            },
                        )
                    })
                    .collect(),
                state,
            })
        }
    })
}

fn filled_to_wit(filled: Filled) -> wp::Filled {
    wp::Filled {
        description: filled.description,
        messages: filled
            .messages
            .into_iter()
            .map(|message| wp::Message {
                role: match message.role {
                    Role::User => wp::Role::User,
                    Role::Assistant => wp::Role::Assistant,
                },
                part: match message.part {
                    Part::Text(text) => wp::Part::Text(text),
                    Part::Image { data, mime_type } => {
                        wp::Part::Image(wp::Media { data, mime_type })
                    }
                    Part::Audio { data, mime_type } => {
                        wp::Part::Audio(wp::Media { data, mime_type })
                    }
                    Part::Resource {
                        uri,
                        mime_type,
                        text,
                    } => wp::Part::Resource(wp::TextResource {
                        uri,
                        mime_type,
                        text,
                    }),
                },
            })
            .collect(),
    }
}
