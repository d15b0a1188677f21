//! A component whose tool name no model could call.

use schemars::JsonSchema;
use serde::Deserialize;
use toolhost_sdk::{Tool, Toolbox};

/// Nothing.
#[derive(Deserialize, JsonSchema)]
struct Nothing {}

struct BadSpec;

impl Toolbox for BadSpec {
    fn tools() -> Vec<Tool> {
        vec![Tool::new(
            "bad name!",
            "Has a space in its name.",
            |_: Nothing| Ok(0),
        )]
    }
}

toolhost_sdk::export!(BadSpec);
