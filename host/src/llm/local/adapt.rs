//! The local model's requests as it gets them ([`SmallModelRules`](super::SmallModelRules)'s
//! `adapt`): tool parameters held to values the conversation holds (the documents it quotes
//! or a tool returned, the time zones of the places it names, the text it gives a tool to
//! work on), sampling against repetition on the rounds that answer, and answers held to the
//! values of a tool's result. All make up for what a 270M model cannot do; the caller's
//! request, and the checks of the calls against the tools' real schemas, stay as they are.

use serde_json::{Map, Value, json};

use super::answer_grammar::Quotable;
use super::conversation_values::{Held, takes_text, types};
use crate::llm::{ChatRequest, Message, ToolDefinition, openai};

/// `request` as the local model gets it, or `None` when that is `request` itself; with
/// `hold_answers`, an answer to the run's tool results is held to their values.
pub(super) fn adapted(request: &ChatRequest, hold_answers: bool) -> Option<ChatRequest> {
    let answering = matches!(request.messages.last(), Some(Message::ToolResult { .. }));
    // After a failure the model may mend its call, so the tools stay offered and the answer
    // free; should it answer instead, the provider asks again, held (see `held`).
    let grammar = if hold_answers && !latest_results_failed(&request.messages) {
        answer_grammar(&request.messages)
    } else {
        None
    };
    // A round held to an answer offers no tools: nothing to narrow then.
    let tools = match grammar {
        Some(_) => None,
        None => grounded(&request.tools, &request.messages),
    };
    if !answering && tools.is_none() {
        return None;
    }
    let mut adapted = request.clone();
    if answering {
        // DRY ("don't repeat yourself"): a penalty on repeating a run of tokens already in
        // the context. Answering from a JSON result with many numbers, the model otherwise
        // loops ("The result is 6, 2, 1, 0, 1, 1, 1, ...") until max_tokens. Not on the
        // other rounds: there it also keeps the model from copying phrases of the question
        // into arguments, which is how an argument is meant to be written.
        adapted
            .extra
            .insert("dry_multiplier".to_owned(), json!(0.8));
    }
    if let Some(tools) = tools {
        adapted.tools = tools;
    }
    if let Some(grammar) = grammar {
        hold(&mut adapted, request, grammar);
    }
    Some(adapted)
}

/// `request`, a round that answers tool results, with the answer held to the values of the
/// run's results and no tools offered: what the provider sends when the model answered a
/// round left free (after a failure) with text instead of a call. `None` when the round
/// answers no tool result.
pub(super) fn held(request: &ChatRequest) -> Option<ChatRequest> {
    if !matches!(request.messages.last(), Some(Message::ToolResult { .. })) {
        return None;
    }
    let grammar = answer_grammar(&request.messages)?;
    let mut held = request.clone();
    held.extra.insert("dry_multiplier".to_owned(), json!(0.8));
    hold(&mut held, request, grammar);
    Some(held)
}

/// Holds `adapted`'s answer to `grammar`. llama-server refuses a grammar with tools, so the
/// round offers none; the chat template still shows the model the tools it saw (by name,
/// description and parameter names), from `answer_tools`, so that the prompt (and the
/// server's cache of it) stays as it was.
fn hold(adapted: &mut ChatRequest, request: &ChatRequest, grammar: String) {
    let shown: Vec<_> = request.tools.iter().map(openai::offered).collect();
    adapted.extra.insert("grammar".to_owned(), json!(grammar));
    adapted.extra.insert(
        "chat_template_kwargs".to_owned(),
        json!({ "answer_tools": shown }),
    );
    adapted.tools.clear();
}

/// Whether a call of the latest turn failed (the results at the end of `messages`).
fn latest_results_failed(messages: &[Message]) -> bool {
    messages
        .iter()
        .rev()
        .map_while(|message| match message {
            Message::ToolResult { is_error, .. } => Some(*is_error),
            _ => None,
        })
        .any(|failed| failed)
}

/// When the conversation ends with tool results, the grammar of an answer that states
/// values of the run's results (those since the latest request; see
/// [`answer_grammar`](super::answer_grammar)), a sentence for each result of the latest
/// turn at most. A result is all the answer may quote: it never states a value no tool
/// returned.
fn answer_grammar(messages: &[Message]) -> Option<String> {
    let latest = messages
        .iter()
        .rev()
        .take_while(|message| matches!(message, Message::ToolResult { .. }))
        .count();
    if latest == 0 {
        return None;
    }
    let asked = messages
        .iter()
        .rposition(|message| matches!(message, Message::User { .. }));
    let question = match asked.map(|at| &messages[at]) {
        Some(Message::User { text }) => text.as_str(),
        _ => "",
    };
    let since_asked = &messages[asked.map_or(0, |at| at + 1)..];
    let mut results: Vec<(&str, bool)> = since_asked[since_asked.len().saturating_sub(latest)..]
        .iter()
        .filter_map(quotable)
        .collect();
    // The latest turn's results, or, when every one of them failed, every result of the
    // run (the latest first): an earlier one may hold the answer.
    if results.iter().all(|&(_, failed)| failed) {
        results = since_asked.iter().rev().filter_map(quotable).collect();
    }
    let results: Vec<Quotable<'_>> = results
        .into_iter()
        .map(|(content, failed)| Quotable { content, failed })
        .collect();
    super::answer_grammar::grammar(question, &results, latest)
}

/// `tools` with each parameter narrowed to the values of the conversation it could take,
/// or `None` when none is:
/// - a parameter that takes a document (an object or an array), to the documents the user
///   wrote or a tool returned. Asked to write a document as a free JSON value, the model
///   invents rows or never closes it (running to max_tokens inside it); held to the
///   conversation's, it copies one exactly.
/// - a parameter that takes a time zone (`timezone`, `time_zone`, `tz`, ...), to the zones
///   of the places the user named. Asked about a city, the model writes the city's name, or
///   a word next to it, where a tool wants an IANA name such as "Europe/Oslo"; held to the
///   zones, it picks the place's.
/// - a parameter that takes a text to work on (`text`, `input`, `content`), when the model
///   writes no other string after it, to the parts of the latest request it could mean and
///   what tools returned since. Copying a text freely, the model changes its case, drops
///   or adds words, or runs on into characters of another script.
/// - a parameter that takes a name (`title`, `name`, `subject`, `label`), to runs of one to
///   three of the latest request's words: free, the model makes up a name of its own from
///   the request's topic rather than the name the request gives.
///
/// Such a parameter cannot take another value then: the price of the model's size.
fn grounded(tools: &[ToolDefinition], messages: &[Message]) -> Option<Vec<ToolDefinition>> {
    let held = Held::of(messages);
    if held.is_empty() {
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
                        // Held to a long run of the request, the text pulls the string
                        // written after it astray: the model goes on with the request's
                        // words instead of starting the next value. So a text followed by
                        // another string stays free, and that string is held instead.
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

/// A tool result's content and whether its call failed; `None` for another message.
fn quotable(message: &Message) -> Option<(&str, bool)> {
    match message {
        Message::ToolResult {
            content, is_error, ..
        } => Some((content.as_str(), *is_error)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolChoice;
    use crate::llm::local::conversation_values::{MAX_DOCUMENT_BYTES, MAX_TEXT_WORDS};

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
            Message::user("Tell me the time in Lima."),
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

        let both = vec![
            Message::user("The hour in Tokyo and in Lima?"),
            result(r#"{"time": "04:02:20"}"#),
            result(r#"{"time": "14:02:20"}"#),
        ];
        let sent = adapted(&request(both)).expect("an answering round");
        assert_eq!(
            sent.extra["grammar"],
            json!(
                "root ::= statement ( \" \" statement )?\n\
                 statement ::= \"The time is 04:02:20.\" | \"The time is 14:02:20.\"\n"
            ),
            "several results at once: a sentence for each, at most"
        );
        assert!(sent.tools.is_empty());
        let nothing = vec![Message::user("Delete the draft."), result("")];
        let sent = adapted(&request(nothing)).expect("an answering round");
        assert_eq!(
            sent.extra["grammar"],
            json!("root ::= \"Done.\"\n"),
            "a result with no value to state: an answer that states none"
        );
    }

    #[test]
    fn a_held_answer_quotes_only_the_results_of_the_run() {
        let failed = Message::ToolResult {
            call_id: "2".into(),
            name: "list_files".into(),
            content: "no such directory: /date".into(),
            is_error: true,
            images: Vec::new(),
        };
        let earlier_run = vec![Message::user("the time?"), result(r#"{"time": "09:41"}"#)];
        let mut messages = earlier_run.clone();
        messages.extend([
            Message::Assistant {
                text: "The time is 09:41.".into(),
                tool_calls: Vec::new(),
            },
            Message::user("list the files in /data"),
            failed.clone(),
        ]);
        let free = adapted(&request(messages.clone())).expect("an answering round");
        assert!(
            free.extra.get("grammar").is_none() && free.tools.len() == 1,
            "after a failure the model may mend its call"
        );
        let sent = held(&free).expect("a round that answers a result");
        assert_eq!(
            sent.extra["grammar"],
            json!("root ::= \"The call failed: no such directory: /date.\"\n"),
            "what the run's results hold, and not an earlier run's 09:41"
        );
        assert!(sent.tools.is_empty());

        let call = |id: &str| Message::Assistant {
            text: String::new(),
            tool_calls: vec![crate::llm::ToolCall {
                id: id.into(),
                name: "list_files".into(),
                arguments: r#"{"path": "/data"}"#.into(),
            }],
        };
        messages.extend([
            call("3"),
            result(r#"["a.csv", "b.txt"]"#),
            call("4"),
            failed,
        ]);
        let sent = held(&request(messages)).expect("a round that answers a result");
        assert_eq!(
            sent.extra["grammar"],
            json!("root ::= \"The result is a.csv, b.txt.\"\n"),
            "the latest call failed: a value of an earlier result of the run"
        );
        assert!(held(&request(vec![Message::user("hi")])).is_none());
    }

    #[test]
    fn name_parameters_take_runs_of_the_request_words() {
        let mut request = request(vec![Message::user(
            "Save a note titled chores saying: fix door.",
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
        for title in ["chores", "fix door", "Save a note"] {
            assert!(titles.contains(&json!(title)), "{title}: {titles:?}");
        }
        for not in [
            "chore note",
            "saying: fix",
            "door.",
            "chores saying fix door",
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
            Message::user("Tell me the time in Lima."),
        ];
        let sent = adapted(&request).expect("narrowed");
        let properties = &sent.tools[0].parameters["properties"];
        assert_eq!(
            properties["timezone"],
            json!({"description": "IANA timezone name", "enum": ["America/Lima", "Europe/Paris"]}),
            "the latest request's place first"
        );
        assert_eq!(
            properties["time"],
            request.tools[0].parameters["properties"]["time"]
        );

        request.messages = vec![Message::user("the time, please?")];
        assert!(adapted(&request).is_none(), "no place named: free as asked");

        for name in ["time_zone", "target_timezone", "timeZone", "tz"] {
            let mut request = time_tool(json!({"type": "object",
                "properties": {name: {"type": ["string", "null"]}}}));
            request.messages = vec![Message::user("hour in new york")];
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
        let mut request = request(vec![Message::user("Compute the SHA-256 of good night?")]);
        request.tools = vec![ToolDefinition {
            name: "sha256".into(),
            description: "Hashes a text.".into(),
            parameters: json!({"type": "object", "properties": {
                "text": {"type": "string", "description": "The text to hash."}}}),
        }];
        let sent = adapted(&request).expect("narrowed");
        let texts = &sent.tools[0].parameters["properties"]["text"]["enum"];
        for text in [
            "good night",
            "good night?",
            "Compute the SHA-256 of good night",
        ] {
            assert!(
                texts.as_array().is_some_and(|t| t.contains(&json!(text))),
                "{text}: {texts}"
            );
        }
        assert!(
            !texts
                .as_array()
                .is_some_and(|t| t.contains(&json!("Good night"))),
            "{texts}"
        );

        request.messages = vec![
            Message::user("hash \"a b\""),
            result("c d"),
            Message::user("and the words of: e f"),
            result("g h"),
        ];
        // Without answers held (the Anthropic format), the tools are offered after a result.
        let sent = super::adapted(&request, false).expect("narrowed");
        let texts = &sent.tools[0].parameters["properties"]["text"]["enum"];
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
        request.messages = vec![Message::user("Save a note titled chores saying: fix door.")];
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
