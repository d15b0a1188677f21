//! What the local model's requests get beyond the caller's: tool parameters held to values
//! the conversation holds (the documents it quotes or a tool returned, the time zones of the
//! places it names, the text it gives a tool to work on), sampling against repetition on the
//! rounds that answer, and answers held to the values of a tool's result. All make
//! up for what a 270M model cannot do; the caller's request, and the checks of the calls
//! against the tools' real schemas, stay as they are.

use serde_json::{Map, Value, json};

use crate::llm::{ChatRequest, Message, ToolDefinition, documents};

/// Documents longer than this are not offered as values: the server's grammar would hold
/// them whole, and a model copies a short document, not a long one.
const MAX_DOCUMENT_BYTES: usize = 4096;
/// At most this many documents (the latest) are offered for a parameter, and as many zones.
const MAX_DOCUMENTS: usize = 8;
/// A request of at most this many words offers what follows each of them as a text.
const MAX_TEXT_WORDS: usize = 64;

/// `request` as the local model gets it, or `None` when that is `request` itself; with
/// `hold_answers`, an answer to a tool's result is held to the result's values.
pub(super) fn adapted(request: &ChatRequest, hold_answers: bool) -> Option<ChatRequest> {
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
    if let Some(grammar) = answer_grammar(&request.messages).filter(|_| hold_answers) {
        // The answer, held to the result's values. llama-server refuses a grammar with
        // tools, so this round offers none; the chat template still shows the model the
        // tools it saw, from `answer_tools`, so that the prompt (and the server's cache of
        // it) stays as it was.
        let shown: Vec<Value> = (adapted.tools.drain(..))
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }})
            })
            .collect();
        adapted.extra.insert("grammar".to_owned(), json!(grammar));
        adapted.extra.insert(
            "chat_template_kwargs".to_owned(),
            json!({ "answer_tools": shown }),
        );
    }
    Some(adapted)
}

/// After one successful tool result, the grammar of an answer that states one of its
/// values (see [`answer`](super::answer)); `None` after a failure (the model may mend its
/// call), after several results at once, or when the result has no value to state.
fn answer_grammar(messages: &[Message]) -> Option<String> {
    let [
        ..,
        before,
        Message::ToolResult {
            content,
            is_error: false,
            ..
        },
    ] = messages
    else {
        return None;
    };
    if matches!(before, Message::ToolResult { .. }) {
        return None;
    }
    let question = messages.iter().rev().find_map(|message| match message {
        Message::User { text } => Some(text.as_str()),
        _ => None,
    })?;
    super::answer::grammar(question, content)
}

/// `tools` with each parameter narrowed to the values of the conversation it could take,
/// or `None` when none is:
/// - a parameter that takes a document (an object or an array), to the documents the user
///   wrote or a tool returned. Asked to write a document as a free JSON value, the model
///   invents rows or never closes it (an eval request ran to max_tokens inside one); held
///   to the conversation's, it copies one exactly.
/// - a parameter that takes a time zone (`timezone`, `time_zone`, `tz`, ...), to the zones
///   of the places the user named. Asked the time in Tokyo, the model writes "Tokyo", or
///   "in", where a tool wants "Asia/Tokyo" (mcp-server-time takes IANA names only); held to
///   the zones, it picks the place's.
/// - a parameter that takes a text to work on (`text`, `input`, `content`), when the model
///   writes no other string after it, to the parts of the latest request it could mean and what tools
///   returned since. Asked for the SHA-256 of "hello world", it wrote "Hello world"; for the
///   crc32 of "toolhost", "toolhostに行く".
///
/// Such a parameter cannot take another value then: the price of the model's size.
fn grounded(tools: &[ToolDefinition], messages: &[Message]) -> Option<Vec<ToolDefinition>> {
    let held = Held {
        documents: conversation_documents(messages),
        zones: conversation_zones(messages),
        texts: conversation_texts(messages),
        names: conversation_names(messages),
    };
    if held.documents.is_empty()
        && held.zones.is_empty()
        && held.texts.is_empty()
        && held.names.is_empty()
    {
        return None;
    }
    let mut changed = false;
    let tools = tools
        .iter()
        .map(|tool| {
            let mut tool = tool.clone();
            let required: Vec<String> = tool
                .parameters
                .get("required")
                .and_then(Value::as_array)
                .map(|names| {
                    names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(properties) = tool
                .parameters
                .get_mut("properties")
                .and_then(Value::as_object_mut)
            {
                let written_after = strings_written_after(properties, &required);
                for (name, property) in properties.iter_mut() {
                    if takes_text(name) && written_after.contains(name) {
                        // The note's text held, the model wrote its title (written after
                        // it) astray: "grocery note" for "titled groceries".
                        continue;
                    }
                    if let Some(narrowed) = held.narrowed(name, property) {
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

/// The values of a conversation a parameter may be held to.
struct Held {
    documents: Vec<Value>,
    zones: Vec<Value>,
    texts: Vec<Value>,
    names: Vec<Value>,
}

impl Held {
    /// `property` (parameter `name`) held to the values it takes, if it takes some of these.
    fn narrowed(&self, name: &str, property: &Value) -> Option<Value> {
        if property.get("enum").is_some() {
            return None;
        }
        let types = types(property);
        let values: Vec<Value> = if takes_time_zone(name) && types.contains(&"string") {
            self.zones.clone()
        } else if takes_text(name) && types.contains(&"string") {
            self.texts.clone()
        } else if takes_name(name) && types.contains(&"string") {
            self.names.clone()
        } else {
            let takes = |document: &&Value| match document {
                Value::Object(_) => types.contains(&"object"),
                Value::Array(_) => types.contains(&"array"),
                _ => false,
            };
            self.documents.iter().filter(takes).cloned().collect()
        };
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
}

/// The parameters after which the model writes another string: it writes the required
/// ones first, then the others, each group in the order of `properties` (as llama-server's
/// grammar lays them out).
fn strings_written_after(properties: &Map<String, Value>, required: &[String]) -> Vec<String> {
    let (first, then): (Vec<_>, Vec<_>) = properties
        .iter()
        .partition(|(name, _)| required.contains(name));
    let order: Vec<(&String, &Value)> = first.into_iter().chain(then).collect();
    order
        .iter()
        .enumerate()
        .filter(|(at, _)| {
            order[at + 1..]
                .iter()
                .any(|(_, later)| types(later).contains(&"string"))
        })
        .map(|(_, (name, _))| (*name).clone())
        .collect()
}

/// The JSON types `property` takes (a property without a type: a string).
fn types(property: &Value) -> Vec<&str> {
    match property.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        None => vec!["string"],
        Some(_) => Vec::new(),
    }
}

/// Whether a parameter so named takes a time zone: "timezone", "time_zone", "timeZone",
/// "target_timezone", "tz", "local_tz".
fn takes_time_zone(name: &str) -> bool {
    let lower = name.to_lowercase();
    let letters: String = lower.chars().filter(char::is_ascii_alphanumeric).collect();
    letters.ends_with("timezone") || lower == "tz" || lower.ends_with("_tz")
}

/// Whether a parameter so named takes a text for the tool to work on.
fn takes_text(name: &str) -> bool {
    matches!(name, "text" | "input" | "content")
}

/// Whether a parameter so named takes a short name for something the tool makes or finds.
fn takes_name(name: &str) -> bool {
    matches!(name, "title" | "name" | "subject" | "label")
}

/// The names the latest request could give: each run of one to three of its words, without
/// the marks around them ("titled groceries saying: buy milk." gives "groceries").
fn conversation_names(messages: &[Message]) -> Vec<Value> {
    const MAX_NAME_WORDS: usize = 3;
    let Some(Message::User { text }) = messages
        .iter()
        .rev()
        .find(|message| matches!(message, Message::User { .. }))
    else {
        return Vec::new();
    };
    let words: Vec<&str> = text
        .split_whitespace()
        .map(|word| word.trim_matches(|c: char| !c.is_alphanumeric()))
        .collect();
    if words.len() > MAX_TEXT_WORDS {
        return Vec::new();
    }
    let mut names: Vec<Value> = Vec::new();
    for start in 0..words.len() {
        for end in start + 1..=(start + MAX_NAME_WORDS).min(words.len()) {
            let run = &words[start..end];
            if run.iter().any(|word| word.is_empty()) {
                break;
            }
            let name = Value::String(run.join(" "));
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// The texts the latest request could give a tool: its quoted parts; what follows each of
/// its words, as written and without the sentence's closing mark ("of hello world?" gives
/// "hello world"), or, in a long request, what follows a colon and the request whole; and
/// what tools returned since it.
fn conversation_texts(messages: &[Message]) -> Vec<Value> {
    let Some(latest) = messages
        .iter()
        .rposition(|message| matches!(message, Message::User { .. }))
    else {
        return Vec::new();
    };
    let mut texts: Vec<String> = Vec::new();
    let mut add = |text: &str| {
        let text = text.trim();
        if !text.is_empty() && !texts.iter().any(|seen| seen == text) {
            texts.push(text.to_owned());
        }
    };
    if let Message::User { text } = &messages[latest]
        && text.len() <= MAX_DOCUMENT_BYTES
    {
        for (open, close) in [('"', '"'), ('“', '”')] {
            let mut parts = text.split([open, close]);
            parts.next();
            for quoted in parts.step_by(2) {
                add(quoted);
            }
        }
        let starts: Vec<usize> = text
            .char_indices()
            .filter(|&(at, c)| {
                !c.is_whitespace()
                    && text[..at]
                        .chars()
                        .next_back()
                        .is_none_or(char::is_whitespace)
            })
            .map(|(at, _)| at)
            .collect();
        if starts.len() <= MAX_TEXT_WORDS {
            for at in starts {
                add(&text[at..]);
                add(text[at..].trim_end_matches(['?', '!', '.']));
            }
        } else {
            add(text);
            if let Some((_, rest)) = text.split_once(": ") {
                add(rest);
            }
        }
    }
    for message in &messages[latest..] {
        if let Message::ToolResult {
            content,
            is_error: false,
            ..
        } = message
            && content.len() <= MAX_DOCUMENT_BYTES
        {
            add(content);
        }
    }
    texts.into_iter().map(Value::String).collect()
}

/// The zones of the places the user named, the latest message's first, each once.
fn conversation_zones(messages: &[Message]) -> Vec<Value> {
    let mut zones: Vec<Value> = Vec::new();
    for message in messages.iter().rev() {
        if let Message::User { text } = message {
            for zone in toolhost_places::zones_named_in(text) {
                let zone = Value::String(zone);
                if !zones.contains(&zone) {
                    zones.push(zone);
                }
            }
        }
    }
    zones.truncate(MAX_DOCUMENTS);
    zones
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

    /// As through the OpenAI format, which holds answers.
    fn adapted(request: &ChatRequest) -> Option<ChatRequest> {
        super::adapted(request, true)
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
        assert!(adapted(&request(vec![Message::user("count: a b c")])).is_none());
    }

    #[test]
    fn the_answer_to_a_result_states_one_of_its_values_and_offers_no_tools() {
        let messages = vec![
            Message::user("What time is it in Tokyo?"),
            result(r#"{"date": "2026-11-24", "time": "04:02:20"}"#),
        ];
        let sent = super::adapted(&request(messages.clone()), false).expect("an answering round");
        assert!(
            sent.extra.get("grammar").is_none(),
            "not through the Anthropic format"
        );
        let sent = adapted(&request(messages)).expect("an answering round");
        assert_eq!(
            sent.extra["grammar"],
            json!("root ::= \"The time is 04:02:20.\"\n")
        );
        assert!(
            sent.tools.is_empty(),
            "llama-server refuses a grammar with tools"
        );
        assert_eq!(
            sent.extra["chat_template_kwargs"]["answer_tools"][0]["function"]["name"],
            json!("json_transform"),
            "the template still shows the tools offered"
        );

        let failed = Message::ToolResult {
            call_id: "1".into(),
            name: "fetch_rows".into(),
            content: "invalid arguments: send `time_zone`".into(),
            is_error: true,
            images: Vec::new(),
        };
        let sent = adapted(&request(vec![Message::user("time in Tokyo?"), failed]))
            .expect("an answering round");
        assert!(sent.extra.get("grammar").is_none(), "free to mend its call");
        assert_eq!(sent.tools.len(), 1);
    }

    #[test]
    fn name_parameters_take_runs_of_the_request_words() {
        let mut request = request(vec![Message::user(
            "Write a note titled groceries saying: buy milk.",
        )]);
        request.tools = vec![ToolDefinition {
            name: "write_note".into(),
            description: "Writes a note.".into(),
            parameters: json!({"type": "object", "required": ["text", "title"], "properties": {
                "text": {"type": "string"}, "title": {"type": "string"}}}),
        }];
        let sent = adapted(&request).expect("narrowed");
        let titles = sent.tools[0].parameters["properties"]["title"]["enum"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for title in ["groceries", "buy milk", "Write a note"] {
            assert!(titles.contains(&json!(title)), "{title}: {titles:?}");
        }
        for not in [
            "grocery note",
            "saying: buy",
            "milk.",
            "groceries saying buy milk",
        ] {
            assert!(!titles.contains(&json!(not)), "{not}: {titles:?}");
        }
    }

    fn time_tool(parameters: Value) -> ChatRequest {
        let mut request = request(Vec::new());
        request.tools = vec![ToolDefinition {
            name: "get_current_time".into(),
            description: "Get current time in a specific timezones".into(),
            parameters,
        }];
        request
    }

    #[test]
    fn time_zone_parameters_take_only_the_zones_of_the_places_the_user_named() {
        // mcp-server-time's schemas: IANA names only.
        let mut request = time_tool(json!({"type": "object", "required": ["timezone"],
            "properties": {"timezone": {"type": "string", "description": "IANA timezone name"},
                           "time": {"type": "string", "description": "HH:MM"}}}));
        request.messages = vec![
            Message::user("I live in Paris."),
            Message::user("What time is it in Tokyo?"),
        ];
        let sent = adapted(&request).expect("narrowed");
        let properties = &sent.tools[0].parameters["properties"];
        assert_eq!(
            properties["timezone"],
            json!({"description": "IANA timezone name", "enum": ["Asia/Tokyo", "Europe/Paris"]}),
            "the latest request's place first"
        );
        assert_eq!(
            properties["time"],
            request.tools[0].parameters["properties"]["time"]
        );

        request.messages = vec![Message::user("what time is it?")];
        assert!(adapted(&request).is_none(), "no place named: free as asked");

        for name in ["time_zone", "target_timezone", "timeZone", "tz"] {
            let mut request = time_tool(json!({"type": "object",
                "properties": {name: {"type": ["string", "null"]}}}));
            request.messages = vec![Message::user("time in new york")];
            let sent = adapted(&request).unwrap_or_else(|| panic!("{name} not narrowed"));
            assert_eq!(
                sent.tools[0].parameters["properties"][name]["enum"],
                json!(["America/New_York"])
            );
        }
        let mut chosen = time_tool(json!({"type": "object",
            "properties": {"zone": {"type": "string"}, "tz": {"enum": ["UTC", "Local"]}}}));
        chosen.messages = vec![Message::user("time in Tokyo")];
        assert!(
            adapted(&chosen).is_none(),
            "a parameter not named for a zone, and one with its own enum, stay as they are"
        );
    }

    #[test]
    fn text_parameters_take_only_the_parts_of_the_request_and_the_results_since() {
        let mut request = request(vec![Message::user("What's the SHA-256 of hello world?")]);
        request.tools = vec![ToolDefinition {
            name: "sha256".into(),
            description: "Hashes a text.".into(),
            parameters: json!({"type": "object", "properties": {
                "text": {"type": "string", "description": "The text to hash."}}}),
        }];
        let sent = adapted(&request).expect("narrowed");
        let texts = &sent.tools[0].parameters["properties"]["text"]["enum"];
        for text in [
            "hello world",
            "hello world?",
            "What's the SHA-256 of hello world",
        ] {
            assert!(
                texts.as_array().is_some_and(|t| t.contains(&json!(text))),
                "{text}: {texts}"
            );
        }
        assert!(
            !texts
                .as_array()
                .is_some_and(|t| t.contains(&json!("Hello world"))),
            "{texts}"
        );

        request.messages = vec![
            Message::user("hash \"a b\""),
            result("c d"),
            Message::user("and the words of: e f"),
            result("g h"),
        ];
        let sent = adapted(&request).expect("narrowed");
        // After a result, the round answers: the tools are shown, not offered.
        let shown = &sent.extra["chat_template_kwargs"]["answer_tools"][0]["function"];
        let texts = &shown["parameters"]["properties"]["text"]["enum"];
        assert_eq!(
            texts,
            &json!([
                "and the words of: e f",
                "the words of: e f",
                "words of: e f",
                "of: e f",
                "e f",
                "f",
                "g h"
            ]),
            "the latest request's words and the result since, not the earlier ones"
        );

        let long = "word ".repeat(MAX_TEXT_WORDS) + "in: the \"end\"";
        request.messages = vec![Message::user(long.clone())];
        let sent = adapted(&request).expect("narrowed");
        assert_eq!(
            sent.tools[0].parameters["properties"]["text"]["enum"],
            json!(["end", long.trim(), "the \"end\""]),
            "a long request offers its quotes, itself and what follows its colon"
        );

        request.tools[0].parameters["properties"]["title"] = json!({"type": "string"});
        request.messages = vec![Message::user(
            "Write a note titled groceries saying: buy milk.",
        )];
        let sent = adapted(&request).expect("the title held");
        assert!(
            sent.tools[0].parameters["properties"]["text"]
                .get("enum")
                .is_none(),
            "a text the model writes another string after stays free"
        );

        request.tools[0].parameters = json!({"type": "object", "required": ["pattern", "text"],
            "properties": {"ignore_case": {"type": "boolean"}, "pattern": {"type": "string"},
                           "text": {"type": "string"}}});
        request.messages = vec![Message::user("find the digits in: a1b2")];
        let sent = adapted(&request).expect("narrowed");
        let properties = &sent.tools[0].parameters["properties"];
        assert!(
            properties["text"]["enum"]
                .as_array()
                .is_some_and(|t| t.contains(&json!("a1b2")))
        );
        assert_eq!(
            properties["pattern"],
            json!({"type": "string"}),
            "written before the text"
        );
    }
}
