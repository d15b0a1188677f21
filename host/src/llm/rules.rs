//! [`ModelRules`]: what a model adds to the general tool loop to make up for what it cannot do
//! alone, behind one interface. The loop asks its [`Provider`](super::Provider) for them
//! ([`Provider::rules`](super::Provider::rules)): a remote model brings none ([`NoRules`]);
//! the local small model brings its own ([`SmallModelRules`](super::local::SmallModelRules)):
//! selection hints, parameters held to the conversation's values, answers held to a result's
//! values.
//!
//! ```
//! use toolhost::llm::{Hint, ModelRules, NoRules};
//!
//! let mut hints = Vec::new();
//! NoRules.request_hints("what's on in Oslo?", &mut |hint| hints.push(hint));
//! assert!(hints.is_empty(), "a remote model ranks tools by their words alone");
//! # let _ = Hint::word("day");
//! ```

use super::ChatRequest;
use crate::spec::ToolSpec;

/// A term a model's rules add to tool selection, beyond the words a tool and a request share.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hint {
    /// A word, compared as selection compares words (lowercased and stemmed): a request that
    /// implies a word without writing it.
    Word(String),
    /// A word exactly as written, not stemmed: met only by the same form of it.
    Form(String),
    /// A mark set on tools and requests alike, met only by itself (a model's rules mark the
    /// tools that take some kind of value and the requests that hold one).
    Mark(&'static str),
}

impl Hint {
    /// The word `word`, stemmed as selection stems words.
    pub fn word(word: &str) -> Self {
        Self::Word(crate::english::stem(&word.to_lowercase()))
    }
}

/// What a model adds to the general tool loop: hints for ranking the tools against a request,
/// and the changes it needs to each request it is sent. Every method does nothing by default.
pub trait ModelRules: Send + Sync {
    /// Adds to selection's terms for `tool`, with their weights (1.0 counts as much as a word
    /// of a parameter's description).
    fn tool_hints(&self, tool: &ToolSpec, add: &mut dyn FnMut(Hint, f32)) {
        let _ = (tool, add);
    }

    /// Adds to selection's terms for `text`, what the user said.
    fn request_hints(&self, text: &str, add: &mut dyn FnMut(Hint)) {
        let _ = (text, add);
    }

    /// `request` as the model is to get it, or `None` when that is `request` itself. The
    /// loop checks the model's calls against the tools' real schemas, whatever this offers.
    fn adapt(&self, request: &ChatRequest) -> Option<ChatRequest> {
        let _ = request;
        None
    }
}

/// No rules: tools ranked by their words alone, requests sent as they are.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRules;

impl ModelRules for NoRules {}
