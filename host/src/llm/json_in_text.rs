//! The JSON documents (objects and arrays) written inside a text, such as the one in "sort
//! these rows: [{"v": 3}, {"v": 1}]": where each one is and the value it holds.

use std::ops::Range;

use serde_json::Value;

/// Every JSON object or array in `text`, where it is and what it holds, in order. Found by
/// parsing at each `{` and `[`, so `[x]`, `{y` or `{"a": }` are not documents; a document
/// inside another one is not listed on its own.
pub(crate) fn json_in_text(text: &str) -> Vec<(Range<usize>, Value)> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(offset) = text[at..].find(['{', '[']) {
        let start = at + offset;
        let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match values.next() {
            Some(Ok(value @ (Value::Object(_) | Value::Array(_)))) => {
                let end = start + values.byte_offset();
                found.push((start..end, value));
                at = end;
            }
            _ => at = start + 1,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn objects_and_arrays_are_found_where_they_parse() {
        let text = r#"sort [3, 1] and [{"a": [1]}], not [x] or {y or {"a": }"#;
        let found = json_in_text(text);
        let values: Vec<&Value> = found.iter().map(|(_, v)| v).collect();
        assert_eq!(values, [&json!([3, 1]), &json!([{"a": [1]}])]);
        assert_eq!(&text[found[1].0.clone()], r#"[{"a": [1]}]"#);
        assert!(json_in_text("no {document} here, 5 and \"text\"").is_empty());
    }
}
