//! Whether calls wait for approval: what a tool's `approval` (`[tools.NAME]`) and an access
//! entry's (`[[mcp.access]]`) say.

use serde::{Deserialize, Serialize};

/// Whether calls wait for approval: for one tool, over the `[approval] ask_for` rules; for the
/// tools of an `[[mcp.access]]` entry, for the callers it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Every call waits for approval.
    Always,
    /// No call does, whatever the rules say.
    Never,
}
