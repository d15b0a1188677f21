//! English words and their stems: a text split into its words (runs of letters or digits,
//! lowercased), and a crude stem so that a word's forms meet. Tool selection ranks tools by
//! them; the local model's rules compare a question's words with a result's fields by them.

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

/// Whether `word` (lowercased) says nothing about what is asked: an English function word
/// ("the", "of", "which") or a word of asking itself ("please", "tell", "show").
pub(crate) fn is_common(word: &str) -> bool {
    COMMON.contains(&word)
}

/// The words of [`is_common`].
const COMMON: &[&str] = &[
    "a", "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by",
    "can", "could", "did", "do", "does", "for", "from", "give", "had", "has", "have", "he", "her",
    "here", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "let", "me",
    "much", "my", "need", "no", "not", "now", "of", "on", "one", "or", "our", "please", "s", "she",
    "should", "show", "so", "some", "such", "t", "tell", "than", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "those", "to", "too", "us", "use", "was", "we",
    "were", "what", "when", "where", "which", "who", "whose", "why", "will", "with", "would",
    "you", "your",
];

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
