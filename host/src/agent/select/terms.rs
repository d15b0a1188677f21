//! The terms selection ranks by ([`Term`]), and how tools and requests yield them: words
//! split, lowercased, stemmed and common ones left out; example values kept out of
//! descriptions; the kinds of values ([`ValueKind`]) a request holds and a tool's required
//! parameters take.

use serde_json::Value;

use crate::english::{is_common, stem, words};
use crate::llm::{Hint, json_in_text};

/// How much a word counts in a tool's parameters (its name counts 3, its description 2).
pub(super) const PARAMETER_WEIGHT: f32 = 1.0;

/// What a tool and a request can share.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Term {
    /// A word, lowercased and stemmed.
    Word(String),
    /// A word as written (from a model's hints).
    Form(String),
    /// A kind of value.
    Value(ValueKind),
    /// A model's mark (from its hints).
    Mark(&'static str),
}

impl From<Hint> for Term {
    fn from(hint: Hint) -> Self {
        match hint {
            Hint::Word(word) => Self::Word(word),
            Hint::Form(form) => Self::Form(form),
            Hint::Mark(mark) => Self::Mark(mark),
        }
    }
}

/// A kind of value a request can hold and a required parameter can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum ValueKind {
    /// A number standing alone; a `number` or `integer` parameter.
    Number,
    /// A file path; a string parameter named or described as a path, file or directory.
    Path,
    /// A URL; a string parameter named or described as one.
    Url,
    /// A JSON document; an `object` or `array` parameter, or a string described as JSON.
    Json,
}

/// `text` with its JSON documents (objects and arrays such as `{"price": 39.5}`) cut out,
/// and whether it held any. A document's keys and values are the data a request is about,
/// not what it asks for: left in, a document's key that happens to be a word of some tool's
/// description (a `product` field and a tool that multiplies) would draw that tool.
pub(super) fn without_documents(text: &str) -> (String, bool) {
    let found = json_in_text(text);
    let mut kept = String::with_capacity(text.len());
    let mut at = 0;
    for (span, _) in &found {
        kept.push_str(&text[at..span.start]);
        kept.push(' ');
        at = span.end;
    }
    kept.push_str(&text[at..]);
    (kept, !found.is_empty())
}

/// The kinds of values written in `text` (its JSON documents cut out first, see
/// [`without_documents`]): a number standing alone (`17`, `-2.5`, `1,000`), a path
/// (`/data/report.txt`, `notes.md`), a URL.
pub(super) fn value_kinds(text: &str) -> Vec<ValueKind> {
    let mut kinds = Vec::new();
    let mut found = |kind| {
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    };
    for token in text.split_whitespace() {
        let token = token.trim_end_matches(['?', '!', ',', ';', ':', ')', '\'', '"']);
        let token = token.trim_start_matches(['(', '\'', '"']);
        let bare = token.trim_end_matches('.');
        if token.starts_with("http://") || token.starts_with("https://") {
            found(ValueKind::Url);
        } else if is_number(bare) {
            found(ValueKind::Number);
        } else if is_path(bare) {
            found(ValueKind::Path);
        }
    }
    kinds
}

fn is_number(token: &str) -> bool {
    let digits = token.strip_prefix(['-', '+']).unwrap_or(token);
    !digits.is_empty()
        && digits.starts_with(|c: char| c.is_ascii_digit())
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
}

/// `/a/b`, `./a`, `~/a` or a file name with a short extension (`report.txt`).
fn is_path(token: &str) -> bool {
    let rooted = ["/", "./", "~/"].iter().any(|p| token.starts_with(p))
        && token
            .chars()
            .nth(1)
            .is_some_and(|c| c.is_alphanumeric() || c == '/');
    let file_name = token.rsplit_once('.').is_some_and(|(stem, extension)| {
        !stem.is_empty()
            && !stem.contains('@')
            && (1..=4).contains(&extension.len())
            && extension.chars().all(|c| c.is_ascii_alphabetic())
    });
    rooted || file_name
}

/// The kinds of values a tool's required parameters take (a kind per parameter, so two
/// required numbers count twice).
pub(super) fn required_kinds(schema: &Value) -> Vec<ValueKind> {
    let (Some(properties), Some(required)) = (
        schema.get("properties").and_then(Value::as_object),
        schema.get("required").and_then(Value::as_array),
    ) else {
        return Vec::new();
    };
    let mut kinds = Vec::new();
    for name in required.iter().filter_map(Value::as_str) {
        let Some(property) = properties.get(name) else {
            continue;
        };
        let types = match property.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if types.iter().any(|t| *t == "number" || *t == "integer") {
            kinds.push(ValueKind::Number);
            continue;
        }
        if types.iter().any(|t| *t == "object" || *t == "array") {
            kinds.push(ValueKind::Json);
            continue;
        }
        let description = property.get("description").and_then(Value::as_str);
        let about = format!("{name} {}", description.unwrap_or("")).to_lowercase();
        let says = |words: &[&str]| {
            about
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| words.contains(&w))
        };
        if says(&["url", "uri", "link"]) {
            kinds.push(ValueKind::Url);
        } else if says(&["json"]) {
            kinds.push(ValueKind::Json);
        } else if says(&["path", "file", "dir", "directory", "folder"]) {
            kinds.push(ValueKind::Path);
        }
    }
    kinds
}

/// The parameter names and descriptions of a JSON schema, nested ones included.
pub(super) fn parameter_text(schema: &Value, add: &mut impl FnMut(&str, f32), depth: usize) {
    if depth > 4 {
        return;
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        add(name, PARAMETER_WEIGHT);
        if let Some(description) = property.get("description").and_then(Value::as_str) {
            add(&without_examples(description), PARAMETER_WEIGHT);
        }
        if let Some(values) = property.get("enum").and_then(Value::as_array) {
            for value in values.iter().filter_map(Value::as_str) {
                add(value, PARAMETER_WEIGHT);
            }
        }
        parameter_text(property, add, depth + 1);
        if let Some(items) = property.get("items") {
            parameter_text(items, add, depth + 1);
        }
    }
}

/// `text` without its example values: quoted text, paths and code ("such as \"Springfield\"",
/// "e.g. 'Europe/Oslo'", "for example /data/report.txt", "such as items[0].name") say what a
/// value may look like, not what the tool does, and would draw every request that mentions
/// that town, zone or file.
pub(super) fn without_examples(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    for token in unquoted(text).split_whitespace() {
        let bare = token.trim_end_matches(['.', ',', ';', ':', ')', '?']);
        let bare = bare.trim_start_matches('(');
        if !is_path(bare) && !is_code(bare) {
            kept.push_str(token);
            kept.push(' ');
        }
    }
    kept
}

/// `text` with its quoted parts blanked: "Springfield", 'Europe/Oslo', “Oslo”, ‘UTC’. A single
/// quote opens only at the start of a word, so the apostrophe of "the tool's" is no quote.
fn unquoted(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut rest = text;
    let mut previous: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        let after = &rest[c.len_utf8()..];
        let close = match c {
            '"' => Some('"'),
            '“' => Some('”'),
            '\'' | '‘' if previous.is_none_or(|p| p.is_whitespace() || "([{".contains(p)) => {
                Some(if c == '‘' { '’' } else { '\'' })
            }
            _ => None,
        };
        let end = close.and_then(|close| {
            after.char_indices().find_map(|(at, d)| {
                let next = after[at + d.len_utf8()..].chars().next();
                (d == close && next.is_none_or(|n| !n.is_alphanumeric()))
                    .then_some(at + d.len_utf8())
            })
        });
        match end {
            Some(end) => {
                kept.push(' ');
                rest = &after[end..];
                previous = Some(' ');
            }
            None => {
                kept.push(c);
                rest = after;
                previous = Some(c);
            }
        }
    }
    kept
}

/// `items[0].name`, `{"a": 1}`, `a.b`: an example written as code.
fn is_code(token: &str) -> bool {
    token.contains(['[', '{', '\\'])
        || token
            .trim_matches('.')
            .split_once('.')
            .is_some_and(|(a, b)| !a.is_empty() && !b.is_empty())
}

/// Calls `f` with every indexed word of `text`: lowercase runs of letters or digits, a run
/// of both also split where letters meet digits, common words left out, each stemmed.
pub(super) fn for_each_word(text: &str, mut f: impl FnMut(String)) {
    for token in words(text) {
        let mut emit = |word: &str| {
            if !is_common(word) {
                f(stem(word));
            }
        };
        emit(&token);
        let has_digit = token.chars().any(|c| c.is_ascii_digit());
        let has_letter = token.chars().any(char::is_alphabetic);
        if has_digit && has_letter {
            let mut start = 0;
            let chars: Vec<(usize, char)> = token.char_indices().collect();
            for pair in chars.windows(2) {
                let ((_, a), (at, b)) = (pair[0], pair[1]);
                if a.is_ascii_digit() != b.is_ascii_digit() {
                    emit(&token[start..at]);
                    start = at;
                }
            }
            emit(&token[start..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ValueKind::{Json, Number, Path, Url};
    use super::*;
    use serde_json::json;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_word(text, |w| out.push(w));
        out
    }

    #[test]
    fn words_are_split_lowercased_stemmed_and_common_ones_dropped() {
        assert_eq!(words("What is the SHA-256 of it?"), ["sha", "256"]);
        assert_eq!(words("sha256"), ["sha256", "sha", "256"]);
        assert_eq!(words("square_root"), ["squar", "root"]);
        assert_eq!(words("Adds"), words("add"));
        assert_eq!(words("adding"), words("added"));
        assert_eq!(words("writes"), words("writing"));
        assert_eq!(words("matches"), words("match"));
        assert_eq!(words("files"), words("file"));
        assert_eq!(words("entries"), words("entry"));
        assert_eq!(words("running"), words("run"));
        assert_eq!(words("Zürich"), ["zürich"]);
    }

    #[test]
    fn values_in_the_request_and_the_kinds_required_parameters_take() {
        assert_eq!(value_kinds("what is 8 minus 5"), [Number]);
        assert_eq!(value_kinds("read /data/report.txt, please"), [Path]);
        assert_eq!(value_kinds("sum of report.csv"), [Path]);
        assert_eq!(value_kinds("get https://example.com/a.json"), [Url]);
        assert!(value_kinds("mail bob@example.com about sha256").is_empty());
        assert_eq!(
            without_documents(r#"which size in {"item": "desk", "size": 2}?"#),
            ("which size in  ?".to_owned(), true),
            "the document's words and numbers are cut out"
        );
        assert_eq!(
            without_documents("sort [3, 1] and [{\"a\": [1]}], not [x] or {y"),
            ("sort   and  , not [x] or {y".to_owned(), true)
        );
        assert_eq!(
            without_documents("no {document} here"),
            ("no {document} here".to_owned(), false)
        );

        let numbers = json!({"type": "object", "required": ["a", "b"], "properties": {
            "a": {"type": "number"}, "b": {"type": "number"}}});
        let file = json!({"type": "object", "required": ["path"], "properties": {
            "path": {"type": "string"}, "top": {"type": "integer"}}});
        let page = json!({"type": "object", "required": ["url", "json"], "properties": {
            "url": {"type": "string"}, "json": {"type": "string", "description": "A JSON text."}}});
        let text = json!({"type": "object", "required": ["text"], "properties": {
            "text": {"type": "string"}}});
        let rows = json!({"type": "object", "required": ["rows"], "properties": {
            "rows": {"type": ["array", "string"]}}});
        assert_eq!(
            required_kinds(&rows),
            [Json],
            "a parameter taking arrays takes a document"
        );
        assert_eq!(required_kinds(&numbers), [Number, Number]);
        assert_eq!(required_kinds(&file), [Path], "`top` is optional");
        assert_eq!(required_kinds(&page), [Url, Json]);
        assert!(required_kinds(&text).is_empty());
    }
}
