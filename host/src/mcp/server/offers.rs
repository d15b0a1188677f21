//! Resources, prompts and completion as `host mcp` serves them: what the toolbox's sources
//! offer (0.2 components' `resources` and `prompts`), in MCP's shapes. The capabilities are
//! announced only when something is offered: `resources` with `subscribe` (see
//! [`super::subscriptions`]) when there are resources.

use std::collections::BTreeMap;

use rmcp::RoleServer;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ErrorData, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PromptMessage, PromptsCapability, ReadResourceResult, Reference,
    ResourcesCapability, ServerCapabilities,
};
use rmcp::service::RequestContext;
use serde_json::Value;

use super::asking::{Asking, Ended, Kind, Round};
use super::{McpServer, content, identity};
use crate::caller::Caller;
use crate::host::Host;
use crate::offers::{FilledPrompt, OfferError, Offers, PromptInput, PromptOutcome, Role};
use crate::toolbox::{no_prompt, no_resource};

/// `capabilities` with resources, prompts and completion added for what `offers` has.
pub(super) fn capabilities(capabilities: &mut ServerCapabilities, offers: &Offers) {
    if !offers.resources.is_empty() || !offers.templates.is_empty() {
        let mut resources = ResourcesCapability::default();
        resources.subscribe = Some(true);
        capabilities.resources = Some(resources);
    }
    if !offers.prompts.is_empty() {
        capabilities.prompts = Some(PromptsCapability::default());
        capabilities.completions = Some(JsonObject::default());
    }
}

/// "Method not found" for what no source offers: the capability is not announced either.
fn not_offered<M: rmcp::model::ConstString>() -> ErrorData {
    ErrorData::method_not_found::<M>()
}

pub(super) fn resources(offers: &Offers) -> Result<ListResourcesResult, ErrorData> {
    if offers.resources.is_empty() && offers.templates.is_empty() {
        return Err(not_offered::<rmcp::model::ListResourcesRequestMethod>());
    }
    Ok(ListResourcesResult::with_all_items(
        offers
            .resources
            .iter()
            .map(|r| {
                let mut resource = rmcp::model::Resource::new(r.uri.clone(), r.name.clone());
                resource.title.clone_from(&r.title);
                resource.description.clone_from(&r.description);
                resource.mime_type.clone_from(&r.mime_type);
                resource
            })
            .collect(),
    ))
}

pub(super) fn templates(offers: &Offers) -> Result<ListResourceTemplatesResult, ErrorData> {
    if offers.resources.is_empty() && offers.templates.is_empty() {
        return Err(not_offered::<rmcp::model::ListResourceTemplatesRequestMethod>());
    }
    Ok(ListResourceTemplatesResult::with_all_items(
        offers
            .templates
            .iter()
            .map(|t| {
                let mut template =
                    rmcp::model::ResourceTemplate::new(t.uri_template.clone(), t.name.clone());
                template.title.clone_from(&t.title);
                template.description.clone_from(&t.description);
                template.mime_type.clone_from(&t.mime_type);
                template
            })
            .collect(),
    ))
}

pub(super) fn prompts(offers: &Offers) -> Result<ListPromptsResult, ErrorData> {
    if offers.prompts.is_empty() {
        return Err(not_offered::<rmcp::model::ListPromptsRequestMethod>());
    }
    Ok(ListPromptsResult::with_all_items(
        offers
            .prompts
            .iter()
            .map(|p| {
                let arguments = p
                    .arguments
                    .iter()
                    .map(|a| {
                        let mut argument = rmcp::model::PromptArgument::new(a.name.clone());
                        argument.description.clone_from(&a.description);
                        argument.required = Some(a.required);
                        argument
                    })
                    .collect();
                let mut prompt = rmcp::model::Prompt::new(
                    p.name.clone(),
                    p.description.clone(),
                    Some(arguments),
                );
                prompt.title.clone_from(&p.title);
                prompt
            })
            .collect(),
    ))
}

/// Reads `uri` from the host's toolbox, if `offers` (the caller's part) has it: one it may
/// not read is refused as one there is not.
pub(super) async fn read(
    host: &Host,
    offers: &Offers,
    uri: &str,
    caller: Option<&Caller>,
) -> Result<ReadResourceResult, ErrorData> {
    if offers.resources.is_empty() && offers.templates.is_empty() {
        return Err(not_offered::<rmcp::model::ReadResourceRequestMethod>());
    }
    if !offers.has_resource(uri) {
        let missing = OfferError::NotFound(no_resource(offers, uri));
        return Err(error_data(missing, Some(uri)));
    }
    let contents = host
        .toolbox()
        .read_resource_for(uri, caller)
        .await
        .map_err(|error| error_data(error, Some(uri)))?;
    let contents = contents
        .into_iter()
        .map(|c| {
            let part = crate::content::ContentPart::Resource(c);
            match content::block(part) {
                rmcp::model::ContentBlock::Resource(embedded) => embedded.resource,
                // A resource part is always a resource block.
                _ => unreachable!("a resource part became another block"),
            }
        })
        .collect();
    Ok(ReadResourceResult::new(contents))
}

/// Whether `uri` can be subscribed to: a resource there is (listed, or of a template);
/// -32602 with the URI in `data` when it is not, as for a read.
pub(super) fn check_subscribable(offers: &Offers, uri: &str) -> Result<(), ErrorData> {
    if offers.resources.is_empty() && offers.templates.is_empty() {
        return Err(not_offered::<rmcp::model::SubscribeRequestMethod>());
    }
    if offers.has_resource(uri) {
        return Ok(());
    }
    let shown: String = uri.chars().take(200).collect();
    let message = format!(
        "no resource has the URI `{shown}`; subscribe to one that resources/list or a resource \
         template names"
    );
    Err(error_data(OfferError::NotFound(message), Some(uri)))
}

/// Fills in the prompt `request` names (if `offers`, the caller's part, has it) with its arguments (values that are not strings as
/// their JSON text), in rounds when the prompt asks for input, as a tool's call does (see
/// [`super::asking`]).
pub(super) async fn get(
    server: &McpServer,
    host: &Host,
    offers: &Offers,
    request: GetPromptRequestParams,
    cx: &RequestContext<RoleServer>,
) -> Result<GetPromptResponse, ErrorData> {
    if offers.prompts.is_empty() {
        return Err(not_offered::<rmcp::model::GetPromptRequestMethod>());
    }
    if !offers.has_prompt(&request.name) {
        let missing = OfferError::NotFound(no_prompt(offers, &request.name));
        return Err(error_data(missing, None));
    }
    let arguments: BTreeMap<String, String> = request
        .arguments
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| match value {
            Value::String(text) => (key, text),
            other => (key, other.to_string()),
        })
        .collect();
    // The arguments as the state is sealed for: a map's JSON has its keys in order.
    let sealed_for = serde_json::to_string(&arguments)
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let caller = identity::caller_of(cx);
    let caller_key = identity::caller_key(caller.as_deref());
    let asking = Asking {
        kind: Kind::Prompt,
        name: &request.name,
        arguments: &sealed_for,
        caller: &caller_key,
    };
    let (name, arguments, caller) = (request.name.as_str(), &arguments, &caller);
    let round = |input: super::asking::Input| async move {
        let input = PromptInput {
            input_responses: input.responses,
            request_state: input.state,
        };
        let outcome = host
            .toolbox()
            .get_prompt_for(name, arguments, &input, caller.as_deref())
            .await
            .map_err(|error| error_data(error, None))?;
        Ok(match outcome {
            PromptOutcome::Filled(filled) => Round::Done(filled),
            PromptOutcome::InputRequired(asked) => Round::Asked(asked),
        })
    };
    let responses = request.input_responses;
    let token = request.request_state.as_deref();
    match server.rounds(asking, responses, token, cx, round).await? {
        Ended::Done(filled) => Ok(filled_result(filled).into()),
        Ended::InputRequired(result) => Ok(result.into()),
    }
}

/// A filled-in prompt as MCP has it.
fn filled_result(filled: FilledPrompt) -> GetPromptResult {
    let messages = filled
        .messages
        .into_iter()
        .map(|message| {
            let role = match message.role {
                Role::User => rmcp::model::Role::User,
                Role::Assistant => rmcp::model::Role::Assistant,
            };
            PromptMessage::new(role, content::block(message.content))
        })
        .collect();
    let mut result = GetPromptResult::new(messages);
    result.description = filled.description;
    result
}

/// Completes a prompt's argument; a resource template's get none.
pub(super) async fn complete(
    host: &Host,
    offers: &Offers,
    request: CompleteRequestParams,
    caller: Option<&Caller>,
) -> Result<CompleteResult, ErrorData> {
    if offers.prompts.is_empty() {
        return Err(not_offered::<rmcp::model::CompleteRequestMethod>());
    }
    let Reference::Prompt(prompt) = &request.r#ref else {
        return Ok(CompleteResult::new(CompletionInfo::default()));
    };
    if !offers.has_prompt(&prompt.name) {
        let missing = OfferError::NotFound(no_prompt(offers, &prompt.name));
        return Err(error_data(missing, None));
    }
    let values = host
        .toolbox()
        .complete_for(
            &prompt.name,
            &request.argument.name,
            &request.argument.value,
            caller,
        )
        .await
        .map_err(|error| error_data(error, None))?;
    let completion =
        CompletionInfo::new(values).map_err(|problem| ErrorData::internal_error(problem, None))?;
    Ok(CompleteResult::new(completion))
}

/// An offer's error as MCP has it: an unknown resource, an unknown prompt or bad arguments
/// are invalid params (-32602; a resource's with its URI in `data`, as SEP-2164 asks), a
/// failure an internal error.
fn error_data(error: OfferError, uri: Option<&str>) -> ErrorData {
    match (error, uri) {
        (OfferError::NotFound(message), Some(uri)) => {
            ErrorData::invalid_params(message, Some(serde_json::json!({ "uri": uri })))
        }
        (OfferError::NotFound(message) | OfferError::InvalidArguments(message), _) => {
            ErrorData::invalid_params(message, None)
        }
        (OfferError::Failed(message), _) => ErrorData::internal_error(message, None),
    }
}
