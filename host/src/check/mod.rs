//! `host check`: a tool component checked the way its author needs before sharing it, as a
//! checklist. The same checks run over every example tool in the conformance tests.
//!
//! For the component: it loads as a tool component, and its `describe` is valid (names legal
//! and unique, descriptions present, input and output schemas valid JSON Schema; the loader
//! refuses a component otherwise). Then for each tool:
//!
//! - its description says enough, and every argument is described;
//! - a call with example arguments made from its input schema returns (a result, or a
//!   failure of its own; not a crash, a timeout, or a refusal of arguments that fit the schema);
//! - the result of that call fits its output schema, when it declares one;
//! - arguments that are not JSON, that miss a required field, or that have a field of the
//!   wrong type come back from the tool itself as invalid-arguments, saying what to send;
//! - it uses nothing it did not request: a capability the sandbox refused it during these
//!   calls must be among the ones its `describe` requests.
//!
//! Nothing is granted unless the [`ComponentConfig`] grants it (but for sockets: with none
//! granted, the check grants one address that nothing uses, so a tool's attempts to connect
//! are seen and named), and the calls run under [`CheckOptions::limits`].
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! use toolhost::check::{CheckOptions, check_component};
//! use toolhost::{ComponentConfig, Runtime, RuntimeConfig};
//!
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let checklist = check_component(
//!     &runtime,
//!     ComponentConfig::new("dist/calculator.wasm"),
//!     &CheckOptions::default(),
//! )
//! .await;
//! for failure in checklist.failures() {
//!     println!("{}: {}", failure.check, failure.detail);
//! }
//! # Ok(())
//! # }
//! ```

mod examples;
mod tool;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr as _;
use std::time::Duration;

use serde::Serialize;

pub use examples::{example_arguments, example_value, wrong_type};

use crate::engine::component::ComponentConfig;
use crate::engine::runtime::Runtime;
use crate::error::LoadError;
use crate::sandbox::{HostPattern, Limits};
use crate::toolbox::Toolbox;

/// One check of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    /// The file is a tool component this host can load.
    Loads,
    /// `describe` is valid: legal, unique names; descriptions; valid schemas.
    Describe,
    /// The tool's description says enough, and every argument is described.
    Descriptions,
    /// A call with example arguments made from the input schema returns.
    ExampleCall,
    /// The example call's result fits the declared output schema.
    OutputSchema,
    /// Bad arguments come back as invalid-arguments from the tool itself.
    InvalidArguments,
    /// The tool uses no capability it does not request.
    OnlyRequested,
}

impl fmt::Display for CheckKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Loads => "loads",
            Self::Describe => "describe",
            Self::Descriptions => "descriptions",
            Self::ExampleCall => "example call",
            Self::OutputSchema => "output schema",
            Self::InvalidArguments => "invalid arguments",
            Self::OnlyRequested => "only what it requests",
        })
    }
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It holds.
    Pass,
    /// It does not: see the item's `detail` and `fix`.
    Fail,
    /// It does not apply, or could not be run (the item's `detail` says why).
    Skip,
}

/// One line of the checklist.
#[derive(Debug, Clone, Serialize)]
pub struct CheckItem {
    /// Which check.
    pub check: CheckKind,
    /// The tool it is about; `None` for the component as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// How it came out.
    pub verdict: Verdict,
    /// What was found: on a pass what held, on a failure the reason.
    pub detail: String,
    /// On a failure, what to change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl CheckItem {
    fn new(check: CheckKind, tool: Option<&str>, verdict: Verdict, detail: String) -> Self {
        Self {
            check,
            tool: tool.map(str::to_owned),
            verdict,
            detail,
            fix: None,
        }
    }

    fn pass(check: CheckKind, tool: Option<&str>, detail: impl Into<String>) -> Self {
        Self::new(check, tool, Verdict::Pass, detail.into())
    }

    fn skip(check: CheckKind, tool: Option<&str>, detail: impl Into<String>) -> Self {
        Self::new(check, tool, Verdict::Skip, detail.into())
    }

    fn fail(
        check: CheckKind,
        tool: Option<&str>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            fix: Some(fix.into()),
            ..Self::new(check, tool, Verdict::Fail, detail.into())
        }
    }
}

/// Every check's outcome for one component, in order.
#[derive(Debug, Clone, Serialize)]
pub struct Checklist {
    /// The component file.
    pub component: PathBuf,
    /// The checks, the component's first, then each tool's.
    pub items: Vec<CheckItem>,
}

impl Checklist {
    /// Whether no check failed.
    pub fn passed(&self) -> bool {
        self.failures().next().is_none()
    }

    /// The checks that failed.
    pub fn failures(&self) -> impl Iterator<Item = &CheckItem> {
        self.items
            .iter()
            .filter(|item| item.verdict == Verdict::Fail)
    }

    /// How many checks came out `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.items
            .iter()
            .filter(|item| item.verdict == verdict)
            .count()
    }
}

/// How the checks run.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The limits of every call the checks make.
    pub limits: Limits,
}

impl Default for CheckOptions {
    /// The default limits, but 5 s of CPU time and a 10 s timeout: an example call of a tool
    /// that is fit to share takes far less.
    fn default() -> Self {
        Self {
            limits: Limits {
                cpu_time: Duration::from_secs(5),
                timeout: Duration::from_secs(10),
                ..Limits::default()
            },
        }
    }
}

/// Runs every check on the component `config` names, under its grants (nothing, for
/// [`ComponentConfig::new`]) and `options`. A component that does not load gets a checklist
/// with that one failure.
pub async fn check_component(
    runtime: &Runtime,
    mut config: ComponentConfig,
    options: &CheckOptions,
) -> Checklist {
    let component = config.path.clone();
    config.limits = options.limits;
    // With no socket granted, a tool cannot even open one, and its attempt leaves no trace;
    // granted an address nobody uses, its connections are checked, refused and named.
    if config.grants.sockets.is_empty()
        && let Ok(unused) = HostPattern::from_str(UNUSED_ADDRESS)
    {
        config.grants.sockets.push(unused);
    }
    let toolbox = match Toolbox::builder(runtime).component(config).build().await {
        Ok(toolbox) => toolbox,
        Err(error) => {
            return Checklist {
                component,
                items: vec![load_failure(&error)],
            };
        }
    };
    let specs = toolbox.specs();
    let contract = toolbox
        .components()
        .next()
        .map(|loaded| loaded.contract().to_string())
        .unwrap_or_default();
    let mut items = vec![
        CheckItem::pass(
            CheckKind::Loads,
            None,
            format!(
                "a tool component: exports {contract}, {} tool{}",
                specs.len(),
                if specs.len() == 1 { "" } else { "s" }
            ),
        ),
        CheckItem::pass(
            CheckKind::Describe,
            None,
            "names legal and unique, every tool described, schemas valid JSON Schema",
        ),
    ];
    for spec in &specs {
        items.extend(tool::check_tool(&toolbox, spec).await);
    }
    toolbox.shutdown().await;
    Checklist { component, items }
}

/// An address no tool reaches (TEST-NET-1, RFC 5737), granted so that sockets a tool opens
/// are checked against the grants, and every connection it tries is refused by name.
const UNUSED_ADDRESS: &str = "192.0.2.1:9";

/// The item for a component that does not load: a bad `describe`, or not a tool component.
fn load_failure(error: &LoadError) -> CheckItem {
    let reason = crate::error::chain(error);
    match error {
        LoadError::InvalidSpec { tool, .. } => CheckItem::fail(
            CheckKind::Describe,
            Some(tool),
            reason,
            "change what `describe` returns for this tool as the reason says, rebuild, and check \
             again (names: 1 to 64 letters, digits, `_` or `-`, each once; a description; an \
             input schema that is a JSON Schema of `\"type\": \"object\"`)",
        ),
        _ => CheckItem::fail(
            CheckKind::Loads,
            None,
            reason,
            "build it as a WebAssembly component that exports the tools interface of \
             wit/tool.wit (world `toolbox`); `host new` makes a project that does",
        ),
    }
}
