//! What the local model's requests get beyond the caller's: tool parameters that take a JSON
//! document held to the documents of the conversation, and sampling against repetition on
//! the rounds that answer. Both make up for what a 270M model cannot do; the caller's
//! request, and the checks of the calls against the tools' real schemas, stay as they are.

use serde_json::{Map, Value, json};

use crate::llm::{ChatRequest, Message, ToolDefinition, documents};

/// Documents longer than this are not offered as values: the server's grammar would hold
/// them whole, and a model copies a short document, not a long one.
const MAX_DOCUMENT_BYTES: usize = 4096;
/// At most this many documents (the latest) are offered for a parameter.
const MAX_DOCUMENTS: usize = 8;

/// `request` as the local model gets it, or `None` when that is `request` itself.
pub(super) fn adapted(request: &ChatRequest) -> Option<ChatRequest> {
    let answering = matches!(request.messages.last(), Some(Message::ToolResult { .. }));
    let tools = grounded(&request.tools, &request.messages);
    if !answering && tools.is_none() {
        return None;
    }
    let mut adapted = request.clone();
    if answering {
        // DRY ("don't repeat yourself"): a penalty on repeating a run of tokens already in
        // the context. Answering from a JSON result with many numbers, the model otherwise
        // loops ("The result is 6, 2, 1, 0, 1, 1, 1, ...") until max_tokens. Not on the
        // other rounds: there it also keeps the model from copying phrases of the question
        // into arguments (measured: on every round, the eval fell from 18/37 to 17/37).
        adapted
            .extra
            .insert("dry_multiplier".to_owned(), json!(0.8));
    }
    if let Some(tools) = tools {
        adapted.tools = tools;
    }
    Some(adapted)
}

/// `tools` with each parameter that takes a document (an object or an array) narrowed to
/// the documents of `messages` it could take, or `None` when none is. Asked to write a
/// document as a free JSON value, the model invents rows or never closes it (an eval request
/// ran to max_tokens inside one); held to the documents the user wrote or a tool returned,
/// it copies one exactly. Such a parameter cannot take a new document then: the price of
/// the model's size.
fn grounded(tools: &[ToolDefinition], messages: &[Message]) -> Option<Vec<ToolDefinition>> {
    let held = conversation_documents(messages);
    if held.is_empty() {
        return None;
    }
    let mut changed = false;
    let tools = tools
        .iter()
        .map(|tool| {
            let mut tool = tool.clone();
            if let Some(properties) = tool
                .parameters
                .get_mut("properties")
                .and_then(Value::as_object_mut)
            {
                for property in properties.values_mut() {
                    if let Some(narrowed) = narrowed(property, &held) {
                        *property = narrowed;
                        changed = true;
                    }
                }
            }
            tool
        })
        .collect();
    changed.then_some(tools)
}

/// The short documents the user wrote and successful tools returned, latest last, each once.
fn conversation_documents(messages: &[Message]) -> Vec<Value> {
    let mut held: Vec<Value> = Vec::new();
    for message in messages {
        let text = match message {
            Message::User { text } => text,
            Message::ToolResult {
                content,
                is_error: false,
                ..
            } => content,
            _ => continue,
        };
        for (span, document) in documents(text) {
            if span.len() <= MAX_DOCUMENT_BYTES && !held.contains(&document) {
                held.push(document);
            }
        }
    }
    let skip = held.len().saturating_sub(MAX_DOCUMENTS);
    held.split_off(skip)
}

/// `property` held to the documents of `held` its types take, if it takes documents.
fn narrowed(property: &Value, held: &[Value]) -> Option<Value> {
    let types: Vec<&str> = match property.get("type")? {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let takes = |document: &&Value| match document {
        Value::Object(_) => types.contains(&"object"),
        Value::Array(_) => types.contains(&"array"),
        _ => false,
    };
    let values: Vec<Value> = held.iter().filter(takes).cloned().collect();
    if values.is_empty() {
        return None;
    }
    let mut narrowed = Map::new();
    if let Some(description) = property.get("description") {
        narrowed.insert("description".to_owned(), description.clone());
    }
    narrowed.insert("enum".to_owned(), Value::Array(values));
    Some(Value::Object(narrowed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolChoice;

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            messages,
            tools: vec![ToolDefinition {
                name: "json_transform".into(),
                description: "Reshapes rows.".into(),
                parameters: json!({"type": "object", "required": ["json"], "properties": {
                    "json": {"type": ["array", "string"], "description": "The rows."},
                    "sort_by": {"type": "string"}}}),
            }],
            tool_choice: ToolChoice::Auto,
            temperature: Some(0.0),
            max_tokens: Some(100),
            stream: false,
            extra: Map::new(),
        }
    }

    fn result(content: &str) -> Message {
        Message::ToolResult {
            call_id: "1".into(),
            name: "fetch_rows".into(),
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    #[test]
    fn a_request_without_documents_or_results_goes_as_it_is() {
        assert!(adapted(&request(vec![Message::user("sort the rows by v")])).is_none());
    }

    #[test]
    fn document_parameters_take_only_the_documents_the_conversation_holds() {
        let question = r#"sort by v: [{"v": 3}, {"v": 1}] (not {"a": 1}, an object)"#;
        let sent = adapted(&request(vec![Message::user(question)])).expect("narrowed");
        let properties = &sent.tools[0].parameters["properties"];
        assert_eq!(
            properties["json"],
            json!({"description": "The rows.", "enum": [[{"v": 3}, {"v": 1}]]}),
            "the array, not the object: the parameter takes no objects"
        );
        assert_eq!(properties["sort_by"], json!({"type": "string"}));
        assert!(sent.extra.is_empty(), "a first round is sampled as asked");

        let later = vec![
            Message::user(question),
            result(r#"[{"v": 1}, {"v": 3}]"#),
            Message::user("and keep the first"),
        ];
        let sent = adapted(&request(later)).expect("narrowed");
        assert_eq!(
            sent.tools[0].parameters["properties"]["json"]["enum"],
            json!([[{"v": 3}, {"v": 1}], [{"v": 1}, {"v": 3}]]),
            "a tool's result counts too"
        );

        let long = format!("sort {}", json!([{"v": "x".repeat(MAX_DOCUMENT_BYTES)}]));
        assert!(adapted(&request(vec![Message::user(long)])).is_none());
    }

    #[test]
    fn only_rounds_after_a_tool_result_are_sampled_against_repetition() {
        let messages = vec![Message::user("count the words in: a b c"), result("3")];
        let sent = adapted(&request(messages.clone())).expect("an answering round");
        assert_eq!(sent.extra["dry_multiplier"], json!(0.8));
        assert_eq!(sent.messages, messages);
        assert_eq!(
            sent.tools,
            request(messages).tools,
            "no documents to hold to"
        );
    }
}
