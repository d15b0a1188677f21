//! What each verified caller of `host mcp` may do: `[[mcp.access]]`, which tools it may list
//! and call, which resources it may read and which prompts it may get (applied by
//! `toolbox::access`); and `[mcp.per_caller]`, its fair share of the server (applied by the
//! HTTP front). Plain data.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU32;

use serde::Deserialize;

use super::approval_mode::ApprovalMode;

/// One `[[mcp.access]]` entry: the callers it matches, and what they may use.
///
/// A caller (a request with a verified access token) matches an entry when its token grants
/// every scope in [`scopes`](Self::scopes) and has every claim in [`claims`](Self::claims).
/// It may use the union of what the entries it matches list; an entry that names no scopes
/// and no claims matches every verified caller. Without entries every caller may use
/// everything, as before access rules existed.
///
/// An entry with `approval = "always"` gives its tools on condition: each call waits until
/// the client approves it (`host mcp` asks it, an elicitation). A call waits only when every
/// entry that gives the caller the tool asks for approval; one that gives it without is
/// enough to call it straight away.
///
/// ```toml
/// [[mcp.access]]
/// scopes = ["notes"]
/// tools = ["notes_write", "notes_read"]
///
/// [[mcp.access]]
/// scopes = ["notes:admin"]
/// tools = ["notes_delete"]
/// approval = "always"
///
/// [[mcp.access]]
/// claims = { groups = "admins" }
/// tools = ["*"]
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessRule {
    /// The scopes a caller's token must grant, all of them (none: any scopes).
    #[serde(default)]
    pub scopes: BTreeSet<String>,
    /// Claims a caller's token must have, all of them: a string claim equal to the value, or
    /// a list claim (a groups claim, say) that holds it. `sub`, `client_id` and `iss` name
    /// the token's subject, client and issuer.
    #[serde(default)]
    pub claims: BTreeMap<String, String>,
    /// The tools the matched callers may list and call, by the names `host mcp` serves; `*`
    /// is every tool.
    #[serde(default)]
    pub tools: BTreeSet<String>,
    /// The prompts they may list and get (and complete), by name; `*` is every prompt.
    #[serde(default)]
    pub prompts: BTreeSet<String>,
    /// The resources they may list and read (and subscribe to), by URI or URI template as
    /// `resources/list` and `resources/templates/list` show them; `*` is every resource.
    #[serde(default)]
    pub resources: BTreeSet<String>,
    /// Whether the matched callers' calls of these tools wait for the client's approval:
    /// `"always"`, or `"never"` (the default).
    #[serde(default)]
    pub approval: Option<ApprovalMode>,
}

/// What stands for "everything" in an entry's `tools`, `prompts` or `resources`.
pub const EVERY: &str = "*";

/// `[mcp.per_caller]`: each caller's fair share of `host mcp --http`, so that one caller
/// flooding the server cannot starve the others. Callers are told apart by their verified
/// token's issuer and subject; requests without a verified caller share one allowance.
/// Nothing is limited by default.
///
/// ```toml
/// [mcp.per_caller]
/// rate = 20    # requests a second, sustained
/// burst = 40   # requests at once after a quiet spell
/// calls = 4    # tool calls running at once
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerCallerLimits {
    /// The requests a second each caller may make, sustained (a token bucket refilled at
    /// this rate); past it a request waits for its caller's next turn (up to half a second),
    /// then is answered 429 with `Retry-After`.
    #[serde(default)]
    pub rate: Option<NonZeroU32>,
    /// How many requests a caller may make at once after a quiet spell (the bucket's size);
    /// the rate when not given.
    #[serde(default)]
    pub burst: Option<NonZeroU32>,
    /// How many `tools/call`s of one caller may run at once; past it a call waits for one of
    /// its caller's to end (up to half a second), then is answered 429.
    #[serde(default)]
    pub calls: Option<NonZeroU32>,
}

impl PerCallerLimits {
    /// These limits, with those `other` sets instead.
    pub fn overridden_by(self, other: PerCallerLimits) -> Self {
        Self {
            rate: other.rate.or(self.rate),
            burst: other.burst.or(self.burst),
            calls: other.calls.or(self.calls),
        }
    }
}
