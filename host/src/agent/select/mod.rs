//! Tool selection: offer a request only the tools that fit it.
//!
//! A small model picks the right tool among three, not among twenty; a large one pays for
//! every tool definition in every request. [`ToolIndex`] ranks the tools against the
//! conversation with BM25 (the ranking of search engines) over each tool's name, description
//! and parameter names and descriptions, and the agent offers the best `k`
//! ([`ToolLimit::Top`](crate::manifest::model::ToolLimit::Top)): `[model] tool_limit = 3` in a manifest, the local model's default.
//!
//! The query is what the user said: the last user message, and the ones before it at half
//! weight (so that a follow-up naming only a new city still finds the tool of the first
//! question). Tool results and the model's own text are left out, so a run offers the same
//! tools from its first round to its last. A tool that shares no term with the request is not
//! offered at all: a greeting gets no tools, and a plain answer.
//!
//! Words are compared lowercased, split at anything but letters and digits and between
//! letters and digits (`sha256` also counts as `sha` and `256`, `square_root` as `square`
//! and `root`), without common English words, and reduced to a crude stem (`adds`, `added`
//! and `adding` all count as `add`). A request's word that no tool has meets the tools' words
//! it begins with or that begin with it, at half weight (`statistics` finds `stats`).
//!
//! Besides words, a request holds values, and a tool's required parameters say which values
//! it needs: numbers, file paths, URLs, JSON documents ([`ValueKind`](terms::ValueKind)). Each
//! kind of value counts as one more term of the request, met by every required parameter of
//! that kind (a `number`, a string named or described as a path, a file or a directory, a
//! URL, JSON), so a request holding two numbers leans to the tools that take numbers even
//! without their words.
//!
//! A model may add terms of its own to both sides ([`ModelRules`]'s hints, see
//! [`ToolIndex::with_rules`]); the ranking treats them like any other term.
//!
//! Only tools scoring at least [`RELATIVE_CUTOFF`] of the best are offered: a clear winner
//! comes alone, since a small model given three tools often calls the wrong one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::llm::{Hint, Message, ModelRules, NoRules};
use crate::spec::ToolSpec;
use crate::toolbox::Catalog;

mod terms;

use terms::{
    PARAMETER_WEIGHT, Term, ValueKind, for_each_word, parameter_text, required_kinds, value_kinds,
    without_documents, without_examples,
};

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// BM25's length normalization.
const B: f32 = 0.75;
/// How much a word counts in each part of a tool: its name says most about it.
const NAME_WEIGHT: f32 = 3.0;
const DESCRIPTION_WEIGHT: f32 = 2.0;
/// The weight of the user messages before the last one (halved again for each earlier one).
const EARLIER_MESSAGE_WEIGHT: f32 = 0.5;
/// The weight of a request's word met only as a prefix of a tool's word (or the other way).
const PREFIX_WEIGHT: f32 = 0.5;
/// The shortest word that meets others by prefix.
const PREFIX_MIN: usize = 4;
/// How much more a tool scores when the request holds a value of every kind its required
/// parameters take (a path for a parameter `path`, numbers for two `number` ones): as a term
/// such a kind says little, since many tools take paths, but between two tools alike in
/// words (a checksum of a text and a checksum of a file, asked with a path) it is what tells
/// them apart.
const FIT_BONUS: f32 = 0.25;
/// A tool is offered only if it scores at least this share of the best tool's score.
pub const RELATIVE_CUTOFF: f32 = 0.85;

/// A search index over tools, for ranking them against a conversation.
///
/// ```
/// use serde_json::json;
/// use toolhost::ToolSpec;
/// use toolhost::agent::ToolIndex;
///
/// let tool = |name: &str, description: &str| ToolSpec {
///     name: name.into(),
///     description: description.into(),
///     input_schema: json!({"type": "object"}),
///     output_schema: None,
///     requested: vec![],
///     annotations: Default::default(),
/// };
/// let index = ToolIndex::new(&[
///     tool("current_weather", "Gets the current weather for a city."),
///     tool("add", "Adds two numbers and returns the sum."),
/// ]);
/// let ranked = index.rank_text("is there weather news for Oslo?");
/// assert_eq!(index.name(ranked[0].0), "current_weather");
/// assert_eq!(ranked.len(), 1, "add shares no word with the question");
/// ```
#[derive(Clone)]
pub struct ToolIndex {
    names: Vec<String>,
    /// Each tool's length in weighted words.
    lengths: Vec<f32>,
    average_length: f32,
    /// For each tool: the kinds of values its required parameters take.
    kinds: Vec<Vec<ValueKind>>,
    /// For each term: the tools that have it, with its weighted count there.
    postings: HashMap<Term, Vec<(u32, f32)>>,
    /// The words of `postings`, sorted, for finding the ones a word begins.
    vocabulary: Vec<String>,
    /// The hints the model adds to each side.
    rules: Arc<dyn ModelRules>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.names)
            .field("terms", &self.postings.len())
            .finish_non_exhaustive()
    }
}

impl Default for ToolIndex {
    fn default() -> Self {
        Self::new([])
    }
}

impl ToolIndex {
    /// Indexes `tools`, to be ranked by their words and the values they take alone.
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a ToolSpec>) -> Self {
        Self::with_rules(tools, Arc::new(NoRules))
    }

    /// Indexes `tools` with the hints `rules` add to tools and, when ranking, to requests.
    pub fn with_rules<'a>(
        tools: impl IntoIterator<Item = &'a ToolSpec>,
        rules: Arc<dyn ModelRules>,
    ) -> Self {
        let mut index = Self {
            names: Vec::new(),
            lengths: Vec::new(),
            average_length: 0.0,
            kinds: Vec::new(),
            postings: HashMap::new(),
            vocabulary: Vec::new(),
            rules,
        };
        let mut counts: HashMap<Term, f32> = HashMap::new();
        for (at, spec) in tools.into_iter().enumerate() {
            counts.clear();
            index.rules.tool_hints(spec, &mut |hint, weight| {
                *counts.entry(Term::from(hint)).or_default() += weight * PARAMETER_WEIGHT;
            });
            let mut add = |text: &str, weight: f32| {
                for_each_word(text, |word| {
                    *counts.entry(Term::Word(word)).or_default() += weight;
                });
            };
            add(&spec.name, NAME_WEIGHT);
            add(&without_examples(&spec.description), DESCRIPTION_WEIGHT);
            parameter_text(&spec.input_schema, &mut add, 0);
            let kinds = required_kinds(&spec.input_schema);
            for kind in &kinds {
                *counts.entry(Term::Value(*kind)).or_default() += PARAMETER_WEIGHT;
            }
            index.kinds.push(kinds);
            let length: f32 = counts.values().sum();
            for (word, count) in counts.drain() {
                let at = u32::try_from(at).unwrap_or(u32::MAX);
                index.postings.entry(word).or_default().push((at, count));
            }
            index.names.push(spec.name.clone());
            index.lengths.push(length);
        }
        index.vocabulary = (index.postings.keys())
            .filter_map(|term| match term {
                Term::Word(word) => Some(word.clone()),
                _ => None,
            })
            .collect();
        index.vocabulary.sort_unstable();
        let total: f32 = index.lengths.iter().sum();
        index.average_length = total / (index.lengths.len().max(1) as f32);
        index
    }

    /// How many tools it holds.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The name of tool number `at` (in the order they were indexed).
    pub fn name(&self, at: usize) -> &str {
        &self.names[at]
    }

    /// The tools that share a word with `text`, best first: (tool number, score).
    pub fn rank_text(&self, text: &str) -> Vec<(usize, f32)> {
        let mut query = HashMap::new();
        self.add_query(&mut query, text, 1.0);
        self.rank_query(&query)
    }

    /// The tools that share a word with what the user said in `messages`, best first.
    pub fn rank(&self, messages: &[Message]) -> Vec<(usize, f32)> {
        self.rank_query(&self.conversation_query(messages))
    }

    fn rank_query(&self, query: &HashMap<Term, f32>) -> Vec<(usize, f32)> {
        let mut scores = vec![0.0f32; self.names.len()];
        for (term, &weight) in query {
            if self.postings.contains_key(term) {
                self.score_term(term, weight, &mut scores);
            } else if let Term::Word(word) = term {
                for known in self.prefix_matches(word) {
                    let known = Term::Word(known.clone());
                    self.score_term(&known, weight * PREFIX_WEIGHT, &mut scores);
                }
            }
        }
        let mut ranked: Vec<(usize, f32)> = scores
            .into_iter()
            .enumerate()
            .filter(|&(_, score)| score > 0.0)
            .map(|(at, score)| {
                let kinds = &self.kinds[at];
                let fits = !kinds.is_empty()
                    && kinds
                        .iter()
                        .all(|kind| query.contains_key(&Term::Value(*kind)));
                (
                    at,
                    if fits {
                        score * (1.0 + FIT_BONUS)
                    } else {
                        score
                    },
                )
            })
            .collect();
        // Best first; equal scores keep the tools' own order.
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }

    /// The indexed words that `word` begins with, or that begin with it (both at least
    /// [`PREFIX_MIN`] letters long).
    fn prefix_matches<'a>(&'a self, word: &'a str) -> impl Iterator<Item = &'a String> + 'a {
        let long_enough = word.len() >= PREFIX_MIN && word.is_ascii();
        let shorter = (PREFIX_MIN..word.len())
            .filter(move |_| long_enough)
            .filter_map(|end| {
                let at = self
                    .vocabulary
                    .binary_search_by(|known| known.as_str().cmp(&word[..end]));
                at.ok().map(|at| &self.vocabulary[at])
            });
        let from = self
            .vocabulary
            .partition_point(|known| known.as_str() <= word);
        let longer = self.vocabulary[from..]
            .iter()
            .take_while(move |known| long_enough && known.starts_with(word));
        shorter.chain(longer)
    }

    /// Adds `term`'s BM25 contribution, at `weight`, to the score of every tool that has it.
    fn score_term(&self, term: &Term, weight: f32, scores: &mut [f32]) {
        let n = self.names.len() as f32;
        if let Some(postings) = self.postings.get(term) {
            let df = postings.len() as f32;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(at, count) in postings {
                let at = at as usize;
                let norm = 1.0 - B + B * self.lengths[at] / self.average_length.max(1.0);
                scores[at] += weight * idf * count * (K1 + 1.0) / (count + K1 * norm);
            }
        }
    }

    /// The terms of the user's messages, the last at full weight, earlier ones at less.
    fn conversation_query(&self, messages: &[Message]) -> HashMap<Term, f32> {
        let mut query = HashMap::new();
        let mut weight = 1.0;
        for message in messages.iter().rev() {
            if let Message::User { text } = message {
                self.add_query(&mut query, text, weight);
                weight *= EARLIER_MESSAGE_WEIGHT;
                if weight < 0.05 {
                    break;
                }
            }
        }
        query
    }

    /// Adds the words of `text`, the kinds of values it holds and the model's hints for it to
    /// `query` at `weight` (a term counts once, at its highest).
    fn add_query(&self, query: &mut HashMap<Term, f32>, text: &str, weight: f32) {
        let mut add = |term: Term| {
            let entry = query.entry(term).or_insert(0.0);
            *entry = entry.max(weight);
        };
        let (text, documents) = without_documents(text);
        if documents {
            add(Term::Value(ValueKind::Json));
        }
        for kind in value_kinds(&text) {
            add(Term::Value(kind));
        }
        self.rules
            .request_hints(&text, &mut |hint: Hint| add(Term::from(hint)));
        for_each_word(&text, |word| add(Term::Word(word)));
    }
}

/// What a request offers of `ranked` (tools with their scores, best first): at most `k`,
/// and only those scoring at least [`RELATIVE_CUTOFF`] of the best.
pub fn offer<T>(mut ranked: Vec<(T, f32)>, k: usize) -> Vec<(T, f32)> {
    let best = ranked.first().map_or(0.0, |&(_, score)| score);
    ranked.retain(|&(_, score)| score >= best * RELATIVE_CUTOFF);
    ranked.truncate(k);
    ranked
}

/// The index of the catalog seen last, rebuilt when the toolbox's tools change.
#[derive(Default)]
pub(crate) struct IndexCache(Mutex<Option<(Arc<Catalog>, Arc<ToolIndex>)>>);

impl IndexCache {
    /// The index of `catalog`, with the hints of `rules` (the same for every call).
    pub(crate) fn get(
        &self,
        catalog: &Arc<Catalog>,
        rules: &Arc<dyn ModelRules>,
    ) -> Arc<ToolIndex> {
        let mut cached = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((seen, index)) = &*cached
            && Arc::ptr_eq(seen, catalog)
        {
            return index.clone();
        }
        let index = Arc::new(ToolIndex::with_rules(catalog.iter(), rules.clone()));
        *cached = Some((catalog.clone(), index.clone()));
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, description: &str, schema: serde_json::Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema: schema,
            output_schema: None,
            requested: vec![],
            annotations: Default::default(),
        }
    }

    #[test]
    fn the_tool_that_shares_the_rarest_words_ranks_first() {
        let number = json!({"type": "object", "properties": {
            "a": {"type": "number", "description": "The first number."},
            "b": {"type": "number", "description": "The second number."}}});
        let index = ToolIndex::new(&[
            spec(
                "add",
                "Adds two numbers and returns the sum.",
                number.clone(),
            ),
            spec("multiply", "Multiplies two numbers.", number),
            spec(
                "current_time",
                "Tells the current date and time in a time zone.",
                json!({"type": "object", "properties": {
                    "time_zone": {"type": "string", "description": "An IANA time zone."}}}),
            ),
        ]);
        let best = |text: &str| {
            index
                .rank_text(text)
                .first()
                .map(|&(at, _)| index.name(at).to_owned())
        };
        assert_eq!(best("please add 7 to 9").as_deref(), Some("add"));
        assert_eq!(best("multiply 3 by 4").as_deref(), Some("multiply"));
        assert_eq!(
            best("which time zone is Lima in").as_deref(),
            Some("current_time")
        );
        assert_eq!(best("Hi, who are you?"), None, "no tool fits a greeting");
    }

    #[test]
    fn values_in_the_request_meet_the_required_parameters_that_take_them() {
        let numbers = json!({"type": "object", "required": ["a", "b"], "properties": {
            "a": {"type": "number"}, "b": {"type": "number"}}});
        let file = json!({"type": "object", "required": ["path"], "properties": {
            "path": {"type": "string"}, "top": {"type": "integer"}}});
        let text = json!({"type": "object", "required": ["text"], "properties": {
            "text": {"type": "string"}}});
        let file = || file.clone();
        // Two tools alike but for what they take; text_words first, so that a tie goes to it:
        // only the path picks file_words.
        let index = ToolIndex::new(&[
            spec("text_words", "Counts the words of a text.", text),
            spec("file_words", "Counts the words of a file.", file()),
            spec("multiply", "Multiplies two numbers.", numbers),
            spec("tell_time", "Tells the time.", json!({})),
        ]);
        let best = |text: &str| index.name(index.rank_text(text)[0].0).to_owned();
        assert_eq!(best("count the words in /data/a.txt"), "file_words");
        assert_eq!(
            best("count the words in this text: to be or not"),
            "text_words"
        );
        assert_eq!(best("12 boxes of 24 pens: how many in all"), "multiply");

        // Alike in words, and the path is the only tell: only the tool that takes it is
        // offered. (The example tools' own descriptions.)
        let checksums = ToolIndex::new(&[
            spec(
                "crc32",
                "Computes the CRC-32 checksum (IEEE, as in zip, gzip and PNG) of a text (its \
                 UTF-8 bytes) and returns it as 8 lowercase hex digits.",
                json!({"type": "object", "required": ["text"], "properties": {"text": {
                    "type": "string", "description": "The text to checksum; its UTF-8 bytes \
                    are used, exactly as given (mind trailing newlines)."}}}),
            ),
            spec(
                "checksum_file",
                "Computes the SHA-256 or CRC-32 checksum of a file under /data, to verify a \
                 download or check whether two files are the same.",
                json!({"type": "object", "required": ["path", "algorithm"], "properties": {
                    "algorithm": {"type": "string", "enum": ["sha256", "crc32"],
                        "description": "sha256 (a cryptographic hash) or crc32 (a quick checksum)."},
                    "path": {"type": "string",
                        "description": "The file, as the tool sees it, such as /data/report.pdf."}}}),
            ),
            // Other tools that take paths, so that a path alone says little.
            spec("read_file", "Reads a text file.", file()),
            spec("list_files", "Lists the files of a directory.", file()),
        ]);
        let offered = |text: &str| -> Vec<String> {
            offer(checksums.rank_text(text), 3)
                .into_iter()
                .map(|(at, _)| checksums.name(at).to_owned())
                .collect()
        };
        assert_eq!(offered("crc32 for /srv/a.bin please"), ["checksum_file"]);
        assert_eq!(offered("crc32 of this text: zebra")[0], "crc32");
    }

    #[test]
    fn a_word_meets_the_words_it_begins_or_ends_by_prefix() {
        let index = ToolIndex::new(&[
            spec("text_stats", "Counts words and sentences.", json!({})),
            spec("read_file", "Reads a file.", json!({})),
        ]);
        let ranked = index.rank_text("statistics please");
        assert_eq!(ranked.len(), 1, "{ranked:?}");
        assert_eq!(index.name(ranked[0].0), "text_stats");
        let exact = index.rank_text("stats please")[0].1;
        assert!(
            ranked[0].1 < exact,
            "a prefix counts less than the word itself"
        );
        let ranked = index.rank_text("one sentence");
        assert_eq!(ranked.len(), 1, "`sentence` begins `sentences`: {ranked:?}");
    }

    #[test]
    fn example_values_in_descriptions_draw_no_request() {
        let index = ToolIndex::new(&[
            spec(
                "current_weather",
                "Gets the weather in a city.",
                json!({"type": "object", "properties": {
                    "town": {"type": "string", "description": "The town, such as \"Springfield\"."}}}),
            ),
            spec(
                "read_file",
                "Reads a file (for example /data/report.txt) or a field such as items[0].name.",
                json!({}),
            ),
        ]);
        assert!(index.rank_text("what's on in Springfield").is_empty());
        assert!(index.rank_text("items name report").is_empty());

        // mcp-server-time's convert_time, whose examples name Tokyo.
        let index = ToolIndex::new(&[spec(
            "convert_time",
            "Convert time between timezones",
            json!({"type": "object", "properties": {
                "target_timezone": {"type": "string", "description":
                    "Target IANA timezone name (e.g., 'Asia/Tokyo', 'America/San_Francisco'). \
                     Use ‘UTC’ if the user's timezone is not given."}}}),
        )]);
        assert!(index.rank_text("asia, san francisco or utc").is_empty());
        assert_eq!(index.rank_text("the user's timezone").len(), 1);
    }

    #[test]
    fn only_tools_close_to_the_best_are_offered() {
        let ranked = vec![(3, 10.0), (1, 9.0), (0, 5.0), (2, 4.0)];
        assert_eq!(offer(ranked.clone(), 3), [(3, 10.0), (1, 9.0)]);
        assert_eq!(offer(ranked, 1), [(3, 10.0)]);
        assert!(offer::<usize>(vec![], 3).is_empty());
    }

    #[test]
    fn the_last_user_message_counts_most() {
        let index = ToolIndex::new(&[
            spec("current_weather", "Gets the weather in a city.", json!({})),
            spec("current_time", "Tells the time in a city.", json!({})),
        ]);
        let messages = [
            Message::user("What's the weather in Oslo?"),
            Message::Assistant {
                text: "Snow. And the time there? I cannot tell.".into(),
                tool_calls: vec![],
            },
            Message::user("and the time?"),
        ];
        let ranked = index.rank(&messages);
        assert_eq!(index.name(ranked[0].0), "current_time");
        assert_eq!(index.name(ranked[1].0), "current_weather", "{ranked:?}");
    }
}
