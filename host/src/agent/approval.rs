//! Asking before acting: which tool calls wait for a person's approval, what they see, and
//! what they decide.
//!
//! A call needs approval when the agent's [`ApprovalRules`] say so (a manifest's
//! `approval = "always"` on the tool, or an `[approval] ask_for` rule matching what the tool
//! holds) or when the run's [`needs_approval`](super::RunOptions::needs_approval) predicate
//! accepts it. The run then pauses with the calls pending; each gets a [`Decision`], and the
//! run resumes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::manifest::{ApprovalMode, AskFor, Manifest};
use crate::sandbox::Grants;
use crate::source::Origin;
use crate::telemetry::metrics::{key, metrics};

impl AskFor {
    /// Whether a tool from `origin` holding `grants` matches.
    pub fn matches(self, origin: Option<&Origin>, grants: Option<&Grants>) -> bool {
        let held = |check: fn(&Grants) -> bool| grants.is_some_and(check);
        match self {
            Self::Any => true,
            Self::Unsandboxed => origin.is_some_and(|origin| !origin.is_sandboxed()),
            Self::ReadDir => held(|g| !g.dirs.is_empty()),
            Self::WriteDir => held(|g| g.dirs.iter().any(|dir| dir.write)),
            Self::Env => held(|g| !g.env.is_empty()),
            Self::Http => held(|g| !g.http.is_empty()),
            Self::Socket => held(|g| !g.sockets.is_empty()),
        }
    }
}

/// Which calls wait for approval, as a manifest says: per tool, and by what tools hold.
/// Nothing waits by default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRules {
    /// Per tool, by the name the model sees; this wins over `ask_for`.
    pub tools: BTreeMap<String, ApprovalMode>,
    /// Calls of tools holding any of these wait for approval.
    pub ask_for: BTreeSet<AskFor>,
}

impl ApprovalRules {
    /// The rules a manifest writes: its `[approval]` section and every tool's `approval`.
    pub fn from_manifest(manifest: &Manifest) -> Self {
        Self {
            tools: manifest
                .tools
                .iter()
                .filter_map(|(name, options)| Some((name.clone(), options.approval?)))
                .collect(),
            ask_for: manifest.approval.ask_for.clone(),
        }
    }

    /// Whether calls of tool `name`, from `origin` and holding `grants`, wait for approval.
    pub fn requires(&self, name: &str, origin: Option<&Origin>, grants: Option<&Grants>) -> bool {
        match self.tools.get(name) {
            Some(ApprovalMode::Always) => true,
            Some(ApprovalMode::Never) => false,
            None => self.ask_for.iter().any(|rule| rule.matches(origin, grants)),
        }
    }

    /// Whether no call ever waits.
    pub fn is_empty(&self) -> bool {
        self.ask_for.is_empty() && !self.tools.values().any(|m| *m == ApprovalMode::Always)
    }
}

/// Decides, for one run, which calls wait for approval besides those the rules name: the
/// library's form of a manifest's rules. It sees the call, its tool's origin and grants.
pub type ApprovalPredicate = Arc<dyn Fn(&PendingCall) -> bool + Send + Sync>;

/// A tool call waiting for approval (or decided), with what a person needs to decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The call's id.
    pub call_id: String,
    /// The tool, by the name the model used.
    pub tool: String,
    /// The arguments, as the model wrote them (a JSON object).
    pub arguments: String,
    /// Where the tool comes from.
    pub origin: Option<Origin>,
    /// What the tool is granted, when it runs in the sandbox.
    pub grants: Option<Grants>,
    /// The decision, once made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// When a program (code mode) made the call: the id of the program's call. Its own id is
    /// `<parent>.<n>`, its `n`th call; the program runs again once it is decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

impl PendingCall {
    /// The arguments as JSON.
    pub fn arguments_json(&self) -> Option<Value> {
        serde_json::from_str(&self.arguments).ok()
    }

    /// What the tool holds, one line each, for a person deciding: directories (and whether
    /// writable), environment variable names (never their values), HTTP hosts, sockets; or
    /// that it runs outside the sandbox.
    pub fn holdings(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(origin) = &self.origin
            && !origin.is_sandboxed()
        {
            lines.push(format!("not sandboxed: {origin}"));
        }
        if let Some(grants) = &self.grants {
            lines.extend(describe_grants(grants));
        }
        lines
    }
}

/// Grants as short lines, without the values of environment variables.
pub(crate) fn describe_grants(grants: &Grants) -> Vec<String> {
    let mut lines: Vec<String> = grants
        .dirs
        .iter()
        .map(|dir| {
            let access = if dir.write { "read-write" } else { "read-only" };
            format!("dir {} ({access}, host {})", dir.guest, dir.host.display())
        })
        .collect();
    lines.extend(grants.env.iter().map(|env| format!("env {}", env.name())));
    lines.extend(grants.http.iter().map(|host| format!("http {host}")));
    lines.extend(grants.sockets.iter().map(|addr| format!("socket {addr}")));
    lines
}

/// What is decided about a call that waits for approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run it.
    Approve,
    /// Run it, and every later call of the same tool in this run without asking.
    ApproveForRun,
    /// Do not run it; the model is told so, with the reason.
    Reject {
        /// Why, for the model (may be empty).
        reason: String,
    },
}

/// How a call's approval went, on its record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// It did not need approval.
    #[default]
    NotRequired,
    /// It was approved.
    Approved,
    /// It was approved for the rest of the run (now, or at an earlier call of the tool).
    ApprovedForRun,
    /// It was rejected.
    Rejected,
}

impl Approval {
    /// Whether it is [`Approval::NotRequired`] (left out of JSON records).
    pub fn is_not_required(&self) -> bool {
        *self == Self::NotRequired
    }
}

/// Counts an approval `decision`: `asked`, `approved` or `denied` (`toolhost.approvals`).
pub(crate) fn approval_metric(decision: &'static str) {
    let attribute = opentelemetry::KeyValue::new(key::APPROVAL, decision);
    metrics().approvals.add(1, &[attribute]);
}

/// What the model is told about a rejected call.
pub(crate) fn rejection_message(reason: &str) -> String {
    let reason = reason.trim();
    if reason.is_empty() {
        "This call was not approved, so it did not run.".to_owned()
    } else {
        format!("This call was not approved, so it did not run. The reason given: {reason}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::DirGrant;

    fn component() -> Origin {
        Origin::Component {
            name: "files".into(),
            path: "files.wasm".into(),
            sha256: "00".into(),
        }
    }

    #[test]
    fn rules_match_what_a_tool_holds_and_per_tool_settings_win() {
        let writes = Grants {
            dirs: vec![DirGrant {
                host: "/n".into(),
                guest: "/notes".into(),
                write: true,
            }],
            ..Grants::default()
        };
        let reads = Grants {
            dirs: vec![DirGrant {
                host: "/d".into(),
                guest: "/data".into(),
                write: false,
            }],
            ..Grants::default()
        };
        let origin = component();
        let rules = ApprovalRules {
            tools: BTreeMap::from([("write_note".to_owned(), ApprovalMode::Never)]),
            ask_for: BTreeSet::from([AskFor::WriteDir, AskFor::Http]),
        };
        assert!(rules.requires("save", Some(&origin), Some(&writes)));
        assert!(!rules.requires("read", Some(&origin), Some(&reads)));
        assert!(!rules.requires("write_note", Some(&origin), Some(&writes)));
        assert!(!rules.requires("add", Some(&origin), Some(&Grants::default())));

        let mcp = Origin::Mcp {
            name: "time".into(),
            endpoint: "uvx mcp-server-time".into(),
        };
        let rules = ApprovalRules {
            tools: BTreeMap::from([("add".to_owned(), ApprovalMode::Always)]),
            ask_for: BTreeSet::from([AskFor::Unsandboxed]),
        };
        assert!(rules.requires("now", Some(&mcp), None));
        assert!(!rules.requires("read", Some(&origin), Some(&reads)));
        assert!(rules.requires("add", Some(&origin), None));
        assert!(ApprovalRules::default().is_empty());
        assert!(!rules.is_empty());
    }

    #[test]
    fn a_rejection_carries_its_reason() {
        assert!(rejection_message("  not today ").ends_with("The reason given: not today"));
        assert!(!rejection_message("").contains("reason"));
    }
}
