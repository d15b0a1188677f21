//! The values of a conversation that the local model's tool parameters may be held to (see
//! [`adapt`](super::adapt)): the documents it quotes or a tool returned, the time zones of
//! the places it names, the texts and names its latest request gives.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::llm::{Message, json_in_text};

/// Documents longer than this are not offered as values: the server's grammar would hold
/// them whole, and a model copies a short document, not a long one.
pub(super) const MAX_DOCUMENT_BYTES: usize = 4096;
/// At most this many documents (the latest) are offered for a parameter, and as many zones.
const MAX_DOCUMENTS: usize = 8;
/// A request of at most this many words offers what follows each of them as a text.
pub(super) const MAX_TEXT_WORDS: usize = 64;

/// The values of a conversation a parameter may be held to.
pub(super) struct Held {
    documents: Vec<Value>,
    zones: Vec<Value>,
    texts: Vec<Value>,
    names: Vec<Value>,
}

impl Held {
    /// What `messages` hold.
    pub(super) fn of(messages: &[Message]) -> Self {
        // The latest request, and what came after it.
        let latest = messages
            .iter()
            .enumerate()
            .rev()
            .find_map(|(at, message)| match message {
                Message::User { text } => Some((text.as_str(), &messages[at + 1..])),
                _ => None,
            });
        Self {
            documents: conversation_documents(messages),
            zones: conversation_zones(messages),
            texts: latest.map_or_else(Vec::new, |(request, since)| request_texts(request, since)),
            names: latest.map_or_else(Vec::new, |(request, _)| request_names(request)),
        }
    }

    /// Whether the conversation holds nothing a parameter could be held to.
    pub(super) fn is_empty(&self) -> bool {
        self.documents.is_empty()
            && self.zones.is_empty()
            && self.texts.is_empty()
            && self.names.is_empty()
    }

    /// `property` (parameter `name`) held to the values it takes, if it takes some of these.
    pub(super) fn narrowed(&self, name: &str, property: &Value) -> Option<Value> {
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

/// The JSON types `property` takes (a property without a type: a string).
pub(super) fn types(property: &Value) -> Vec<&str> {
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
pub(super) fn takes_text(name: &str) -> bool {
    matches!(name, "text" | "input" | "content")
}

/// Whether a parameter so named takes a short name for something the tool makes or finds.
fn takes_name(name: &str) -> bool {
    matches!(name, "title" | "name" | "subject" | "label")
}

/// The names a request could give: each run of one to three of its words, without the marks
/// around them ("titled chores saying: fix door." gives "chores").
fn request_names(text: &str) -> Vec<Value> {
    const MAX_NAME_WORDS: usize = 3;
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

/// The texts request `text` could give a tool: its quoted parts; what follows each of
/// its words, as written and without the sentence's closing mark ("of good night?" gives
/// "good night"), or, in a long request, what follows a colon and the request whole; and
/// what tools returned `since` it.
fn request_texts(text: &str, since: &[Message]) -> Vec<Value> {
    let mut texts: Vec<String> = Vec::new();
    // Each once, looked up in a set: a request of many words, or a turn of many results,
    // costs time in proportion to its size.
    let mut seen: HashSet<String> = HashSet::new();
    let mut add = |text: &str| {
        let text = text.trim();
        if !text.is_empty() && seen.insert(text.to_owned()) {
            texts.push(text.to_owned());
        }
    };
    if text.len() <= MAX_DOCUMENT_BYTES {
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
    for message in since {
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
            for zone in toolhost_place_zones::zones_named_in(text) {
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
    // Each once, known by its text (a `Value` cannot be hashed).
    let mut seen: HashSet<String> = HashSet::new();
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
        for (span, document) in json_in_text(text) {
            if span.len() <= MAX_DOCUMENT_BYTES && seen.insert(document.to_string()) {
                held.push(document);
            }
        }
    }
    let skip = held.len().saturating_sub(MAX_DOCUMENTS);
    held.split_off(skip)
}
