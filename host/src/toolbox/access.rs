//! What each verified caller may use: the manifest's `[[mcp.access]]` rules applied to a
//! [`Caller`], giving the tools, prompts and resources it may see ([`Allowed`]). Everything
//! `host mcp` answers a caller (`tools/list`, `tools/call`, resources, prompts, completion)
//! goes through the one [`Allowed`] made for it, so that what it may not use looks exactly
//! like what does not exist.
//!
//! Deny by default once there are rules: a verified caller that matches no entry may use
//! nothing. Without rules, or without a verified caller (stdio, a static bearer token, the
//! library: the operator who runs the host), everything is allowed, as before rules existed.
//!
//! Every build checks the rules when a manifest loads ([`Access::check`]); only `host mcp`
//! (the `mcp-server` feature) applies them to callers.
#![cfg_attr(not(feature = "mcp-server"), allow(dead_code))]

use std::collections::BTreeSet;

use serde_json::Value;

use crate::caller::Caller;
use crate::manifest::ApprovalMode;
use crate::manifest::access::{AccessRule, EVERY};
use crate::offers::Offers;
use crate::toolbox::Catalog;

/// The `[[mcp.access]]` rules of a manifest, ready to be applied to callers.
#[derive(Debug, Clone, Default)]
pub struct Access {
    rules: Vec<AccessRule>,
}

/// What one caller may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowed {
    /// Everything: there are no rules, or the request has no verified caller.
    Everything,
    /// What the rules the caller matches list, together.
    Only {
        /// Tool names (or `*`).
        tools: BTreeSet<String>,
        /// The tools (or `*`) an entry gives without asking for approval: a call of any
        /// other tool waits for the client's approval.
        unasked: BTreeSet<String>,
        /// Prompt names (or `*`).
        prompts: BTreeSet<String>,
        /// Resource URIs and URI templates (or `*`).
        resources: BTreeSet<String>,
    },
}

impl Access {
    /// The rules `rules`, in the manifest's order.
    pub fn new(rules: &[AccessRule]) -> Self {
        Self {
            rules: rules.to_vec(),
        }
    }

    /// Whether there are no rules (every caller may use everything).
    pub fn is_open(&self) -> bool {
        self.rules.is_empty()
    }

    /// What `caller` may use: the union of the entries it matches.
    pub fn allowed(&self, caller: Option<&Caller>) -> Allowed {
        let Some(caller) = caller.filter(|_| !self.is_open()) else {
            return Allowed::Everything;
        };
        let (mut tools, mut unasked, mut prompts, mut resources) = Default::default();
        for rule in self.rules.iter().filter(|rule| matches(rule, caller)) {
            extend(&mut tools, &rule.tools);
            if rule.approval != Some(ApprovalMode::Always) {
                extend(&mut unasked, &rule.tools);
            }
            extend(&mut prompts, &rule.prompts);
            extend(&mut resources, &rule.resources);
        }
        Allowed::Only {
            tools,
            unasked,
            prompts,
            resources,
        }
    }

    /// Checks the rules against what was loaded: every tool, prompt and resource they name
    /// must exist (or be `*`), a tool in `catalog` or among `served` (served besides it, as
    /// code mode's `run_code`). The error names the unknown ones and what there is.
    pub fn check(&self, catalog: &Catalog, served: &[&str], offers: &Offers) -> Result<(), String> {
        let rules = &self.rules;
        let tools = unknown(rules.iter().flat_map(|r| &r.tools), |name| {
            catalog.get(name).is_some() || served.contains(&name)
        });
        if !tools.is_empty() {
            return Err(format!(
                "[[mcp.access]] names tools that no loaded tool is: {tools}; the tools are: {}",
                catalog.names().join(", ")
            ));
        }
        let prompts = unknown(rules.iter().flat_map(|r| &r.prompts), |name| {
            offers.has_prompt(name)
        });
        if !prompts.is_empty() {
            let known: Vec<&str> = offers.prompts.iter().map(|p| p.name.as_str()).collect();
            return Err(format!(
                "[[mcp.access]] names prompts that no source offers: {prompts}; the prompts \
                 are: {}",
                or_none(&known)
            ));
        }
        let resources = unknown(rules.iter().flat_map(|r| &r.resources), |uri| {
            resource_names(offers).any(|known| known == uri)
        });
        if !resources.is_empty() {
            let known: Vec<&str> = resource_names(offers).collect();
            return Err(format!(
                "[[mcp.access]] names resources that no source offers: {resources}; the \
                 resources and templates are: {}",
                or_none(&known)
            ));
        }
        Ok(())
    }
}

/// The names of `named` that are not `*` and not `known`, in order, once each, joined.
fn unknown<'a>(named: impl Iterator<Item = &'a String>, known: impl Fn(&str) -> bool) -> String {
    let names: BTreeSet<&str> = named
        .map(String::as_str)
        .filter(|name| *name != EVERY && !known(name))
        .collect();
    names.into_iter().collect::<Vec<_>>().join(", ")
}

impl Allowed {
    /// Whether the caller may list and call the tool `name`.
    pub fn tool(&self, name: &str) -> bool {
        match self {
            Self::Everything => true,
            Self::Only { tools, .. } => holds(tools, name),
        }
    }

    /// Whether the caller's calls of the tool `name` wait for its approval: every entry that
    /// gives it the tool asks for approval (`approval = "always"`).
    pub fn needs_approval(&self, name: &str) -> bool {
        match self {
            Self::Everything => false,
            Self::Only { unasked, .. } => self.tool(name) && !holds(unasked, name),
        }
    }

    /// Whether the caller may list, get and complete the prompt `name`.
    pub fn prompt(&self, name: &str) -> bool {
        match self {
            Self::Everything => true,
            Self::Only { prompts, .. } => holds(prompts, name),
        }
    }

    /// The part of `offers` the caller may see and use: the listed resources and templates
    /// it may use, its prompts.
    pub fn offers(&self, offers: &Offers) -> Offers {
        let Self::Only { resources, .. } = self else {
            return offers.clone();
        };
        Offers {
            resources: (offers.resources.iter())
                .filter(|r| holds(resources, &r.uri))
                .cloned()
                .collect(),
            templates: (offers.templates.iter())
                .filter(|t| holds(resources, &t.uri_template))
                .cloned()
                .collect(),
            prompts: (offers.prompts.iter())
                .filter(|p| self.prompt(&p.name))
                .cloned()
                .collect(),
        }
    }
}

/// Whether `caller` matches `rule`: every scope granted, every claim present.
fn matches(rule: &AccessRule, caller: &Caller) -> bool {
    rule.scopes.is_subset(&caller.scopes)
        && (rule.claims.iter()).all(|(name, wanted)| has_claim(caller, name, wanted))
}

/// Whether `caller`'s token has the claim `name` with the value `wanted`: a string equal to
/// it, or a list that holds it. `sub`, `client_id` and `iss` are the caller's own fields.
fn has_claim(caller: &Caller, name: &str, wanted: &str) -> bool {
    match name {
        "sub" => caller.subject == wanted,
        "client_id" => caller.client_id.as_deref() == Some(wanted),
        "iss" => caller.issuer == wanted,
        _ => match caller.claims.get(name) {
            Some(Value::String(value)) => value == wanted,
            Some(Value::Array(values)) => values.iter().any(|v| v.as_str() == Some(wanted)),
            _ => false,
        },
    }
}

fn holds(names: &BTreeSet<String>, name: &str) -> bool {
    names.contains(EVERY) || names.contains(name)
}

fn extend(into: &mut BTreeSet<String>, names: &BTreeSet<String>) {
    into.extend(names.iter().cloned());
}

/// The URIs and URI templates `offers` lists, as `[[mcp.access]]` names resources.
fn resource_names(offers: &Offers) -> impl Iterator<Item = &str> {
    (offers.resources.iter().map(|r| r.uri.as_str()))
        .chain(offers.templates.iter().map(|t| t.uri_template.as_str()))
}

fn or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    fn caller(subject: &str, scopes: &[&str], groups: &[&str]) -> Caller {
        Caller {
            subject: subject.to_owned(),
            client_id: Some("app".to_owned()),
            issuer: "https://issuer.example".to_owned(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            claims: BTreeMap::from([("groups".to_owned(), json!(groups))]),
        }
    }

    fn rules(toml_text: &str) -> Access {
        #[derive(serde::Deserialize)]
        struct Section {
            access: Vec<AccessRule>,
        }
        let section: Section = toml::from_str(toml_text).unwrap_or_else(|e| panic!("{e}"));
        Access::new(&section.access)
    }

    #[test]
    fn a_caller_gets_the_union_of_the_entries_it_matches_and_nothing_else() {
        let access = rules(
            r#"
            [[access]]
            scopes = ["notes"]
            tools = ["notes_read", "notes_write"]
            [[access]]
            claims = { groups = "admins" }
            tools = ["shell"]
            [[access]]
            claims = { sub = "carol", client_id = "app" }
            tools = ["clock"]
            "#,
        );
        let reader = access.allowed(Some(&caller("alice", &["notes"], &[])));
        assert!(reader.tool("notes_write") && !reader.tool("shell") && !reader.tool("clock"));
        let admin = access.allowed(Some(&caller("bob", &["notes"], &["staff", "admins"])));
        assert!(admin.tool("notes_read") && admin.tool("shell"));
        let carol = access.allowed(Some(&caller("carol", &[], &[])));
        assert!(carol.tool("clock") && !carol.tool("notes_read"));
        let stranger = access.allowed(Some(&caller("eve", &["other"], &["staff"])));
        assert!(!stranger.tool("notes_read") && !stranger.tool("clock"));
        // The operator (no verified caller) is not restricted.
        assert_eq!(access.allowed(None), Allowed::Everything);
    }

    #[test]
    fn a_call_waits_for_approval_only_when_every_entry_giving_the_tool_asks_for_it() {
        let access = rules(
            r#"
            [[access]]
            scopes = ["notes"]
            tools = ["notes_read"]
            [[access]]
            claims = { groups = "staff" }
            tools = ["*"]
            approval = "always"
            [[access]]
            claims = { groups = "admins" }
            tools = ["shell"]
            approval = "never"
            "#,
        );
        let staff = access.allowed(Some(&caller("alice", &[], &["staff"])));
        assert!(staff.needs_approval("notes_read") && staff.needs_approval("shell"));
        // Another entry gives notes_read without asking.
        let reader = access.allowed(Some(&caller("bob", &["notes"], &["staff"])));
        assert!(!reader.needs_approval("notes_read") && reader.needs_approval("shell"));
        let admin = access.allowed(Some(&caller("root", &[], &["staff", "admins"])));
        assert!(!admin.needs_approval("shell") && admin.needs_approval("notes_read"));
        // A tool the caller may not use at all is not one it could approve.
        let stranger = access.allowed(Some(&caller("eve", &["notes"], &[])));
        assert!(!stranger.needs_approval("shell") && !stranger.tool("shell"));
        assert!(!access.allowed(None).needs_approval("shell"));
    }

    #[test]
    fn without_rules_every_caller_may_use_everything() {
        let access = Access::new(&[]);
        assert_eq!(
            access.allowed(Some(&caller("eve", &[], &[]))),
            Allowed::Everything
        );
    }

    #[test]
    fn a_star_allows_everything_of_its_kind_only() {
        let access = rules(
            r#"
            [[access]]
            tools = ["*"]
            "#,
        );
        let anyone = access.allowed(Some(&caller("eve", &[], &[])));
        assert!(anyone.tool("anything") && !anyone.prompt("summary"));
    }

    #[test]
    fn a_claim_of_another_type_does_not_match() {
        let access = rules(
            r#"
            [[access]]
            claims = { level = "3" }
            tools = ["shell"]
            "#,
        );
        let mut numeric = caller("eve", &[], &[]);
        numeric.claims.insert("level".to_owned(), json!(3));
        assert!(!access.allowed(Some(&numeric)).tool("shell"));
        numeric.claims.insert("level".to_owned(), json!("3"));
        assert!(access.allowed(Some(&numeric)).tool("shell"));
    }
}
