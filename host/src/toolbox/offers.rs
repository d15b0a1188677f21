//! What the toolbox's sources offer besides tools: resources and prompts, under one set of
//! URIs and prompt names (the first source to offer one has it), and reading or filling them
//! in at the source that offers them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::Toolbox;
use crate::caller::Caller;
use crate::offers::{OfferError, Offers, PromptInput, PromptOutcome, ResourceContents};
use crate::source::ToolSource;

impl Toolbox {
    /// Every source's resources, templates and prompts, in the sources' order; a URI, template
    /// or prompt name offered again by a later source is left out (with a warning).
    pub fn offers(&self) -> Offers {
        let mut all = Offers::default();
        let (mut uris, mut templates, mut prompts) =
            (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        for source in self.sources() {
            let Some(offers) = source.offers() else {
                continue;
            };
            let origin = source.origin();
            let keep = |seen: &mut BTreeSet<String>, key: &str, what: &str| {
                let new = seen.insert(key.to_owned());
                if !new {
                    tracing::warn!(
                        "{origin} also offers the {what} {key}; an earlier source has it"
                    );
                }
                new
            };
            for resource in &offers.resources {
                if keep(&mut uris, &resource.uri, "resource") {
                    all.resources.push(resource.clone());
                }
            }
            for template in &offers.templates {
                if keep(&mut templates, &template.uri_template, "resource template") {
                    all.templates.push(template.clone());
                }
            }
            for prompt in &offers.prompts {
                if keep(&mut prompts, &prompt.name, "prompt") {
                    all.prompts.push(prompt.clone());
                }
            }
        }
        all
    }

    /// Reads resource `uri` at the source that has it (see [`resource_source`]), for the
    /// operator (no caller: a directory granted per caller is not there).
    ///
    /// [`resource_source`]: Self::resource_source
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>, OfferError> {
        self.read_resource_for(uri, None).await
    }

    /// Reads resource `uri` for `caller`: the source's directories granted per caller are
    /// the caller's own, as in its calls.
    pub async fn read_resource_for(
        &self,
        uri: &str,
        caller: Option<&Caller>,
    ) -> Result<Vec<ResourceContents>, OfferError> {
        let source = self
            .resource_source(uri)
            .ok_or_else(|| OfferError::NotFound(self.no_resource(uri)))?;
        source.read_resource(uri, caller).await
    }

    /// The source whose resource `uri` is: the first that lists it, else the first with a
    /// template it matches.
    pub fn resource_source(&self, uri: &str) -> Option<&Arc<dyn ToolSource>> {
        let listed = |offers: &Offers| offers.resources.iter().any(|r| r.uri == uri);
        let templated = |offers: &Offers| offers.templates.iter().any(|t| t.matches(uri));
        self.offering(listed).or_else(|| self.offering(templated))
    }

    /// Fills in prompt `name` at the source that offers it; `input` has the answers when an
    /// earlier round asked for input (empty in a first round). A prompt that asks for input
    /// is [`PromptOutcome::InputRequired`]: whoever drives the request gets the answers.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: &BTreeMap<String, String>,
        input: &PromptInput,
    ) -> Result<PromptOutcome, OfferError> {
        self.get_prompt_for(name, arguments, input, None).await
    }

    /// [`get_prompt`](Self::get_prompt) for `caller`, whose directories per caller the
    /// prompt's source gets.
    pub async fn get_prompt_for(
        &self,
        name: &str,
        arguments: &BTreeMap<String, String>,
        input: &PromptInput,
        caller: Option<&Caller>,
    ) -> Result<PromptOutcome, OfferError> {
        let source = self
            .offering(|offers| offers.has_prompt(name))
            .ok_or_else(|| OfferError::NotFound(self.no_prompt(name)))?;
        source.get_prompt(name, arguments, input, caller).await
    }

    /// Values completing `value` for argument `argument` of prompt `prompt`.
    pub async fn complete(
        &self,
        prompt: &str,
        argument: &str,
        value: &str,
    ) -> Result<Vec<String>, OfferError> {
        self.complete_for(prompt, argument, value, None).await
    }

    /// [`complete`](Self::complete) for `caller`, whose directories per caller the prompt's
    /// source gets.
    pub async fn complete_for(
        &self,
        prompt: &str,
        argument: &str,
        value: &str,
        caller: Option<&Caller>,
    ) -> Result<Vec<String>, OfferError> {
        let source = self
            .offering(|offers| offers.has_prompt(prompt))
            .ok_or_else(|| OfferError::NotFound(self.no_prompt(prompt)))?;
        source.complete(prompt, argument, value, caller).await
    }

    fn offering(&self, has: impl Fn(&Offers) -> bool) -> Option<&Arc<dyn ToolSource>> {
        self.sources()
            .find(|source| source.offers().is_some_and(&has))
    }

    fn no_resource(&self, uri: &str) -> String {
        no_resource(&self.offers(), uri)
    }

    fn no_prompt(&self, name: &str) -> String {
        no_prompt(&self.offers(), name)
    }
}

/// What is said of a resource `uri` that `offers` does not have: the same whether it does
/// not exist or a caller may not read it (`offers` is then the caller's part).
pub fn no_resource(offers: &Offers, uri: &str) -> String {
    let known: Vec<&str> = offers
        .resources
        .iter()
        .map(|r| r.uri.as_str())
        .chain(offers.templates.iter().map(|t| t.uri_template.as_str()))
        .take(20)
        .collect();
    format!(
        "no resource has the URI {}; there are: {}",
        shortened(uri),
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    )
}

/// What is said of a prompt `name` that `offers` does not have (see [`no_resource`]).
pub fn no_prompt(offers: &Offers, name: &str) -> String {
    let known: Vec<&str> = offers
        .prompts
        .iter()
        .map(|p| p.name.as_str())
        .take(20)
        .collect();
    format!(
        "there is no prompt {}; there are: {}",
        shortened(name),
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    )
}

/// `text` cut to 200 characters, for an error that echoes it.
fn shortened(text: &str) -> String {
    let mut cut: String = text.chars().take(200).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    format!("`{cut}`")
}
