//! Words of English text, as the tool selection and the local model's answers compare them: runs
//! of letters or digits, lowercased, and a crude stem so that a word's forms meet.

/// The words of `text`: its runs of letters or digits, lowercased (`"SHA-256 of it?"` ->
/// `sha`, `256`, `of`, `it`).
pub(crate) fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

/// A crude English stem: enough that a word and its plural, past and -ing forms meet.
pub(crate) fn stem(word: &str) -> String {
    let mut w = word.to_owned();
    if w.len() <= 3 || !w.is_ascii() {
        return w;
    }
    if w.ends_with("ies") && w.len() > 4 {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if ["sses", "ches", "shes", "xes", "zes"]
        .iter()
        .any(|s| w.ends_with(s))
    {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.pop();
    }
    if w.len() > 5 && w.ends_with("ing") {
        w.truncate(w.len() - 3);
    } else if w.len() > 4 && w.ends_with("ed") && !w.ends_with("eed") {
        w.truncate(w.len() - 2);
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    // "running" -> "runn" -> "run"
    let bytes = w.as_bytes();
    if w.len() > 3
        && bytes[bytes.len() - 1] == bytes[bytes.len() - 2]
        && !b"lsz".contains(&bytes[bytes.len() - 1])
        && !bytes[bytes.len() - 1].is_ascii_digit()
    {
        w.pop();
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_runs_of_letters_or_digits_lowercased() {
        let split: Vec<String> = words("What is the SHA-256 of Zürich's file_name?").collect();
        assert_eq!(
            split,
            [
                "what", "is", "the", "sha", "256", "of", "zürich", "s", "file", "name"
            ]
        );
        assert_eq!(words(" -- ").count(), 0);
    }

    #[test]
    fn a_word_and_its_plural_past_and_ing_forms_share_a_stem() {
        for (a, b) in [
            ("adds", "add"),
            ("adding", "added"),
            ("writes", "writing"),
            ("matches", "match"),
            ("files", "file"),
            ("entries", "entry"),
            ("running", "run"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} and {b}");
        }
        assert_eq!(stem("square"), "squar");
        assert_eq!(stem("status"), "status", "-us is not a plural");
        assert_eq!(stem("zürich"), "zürich", "not ASCII: left as it is");
    }
}
