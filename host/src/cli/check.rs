//! `host check`: a component's checklist for its author.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use toolhost::check::{CheckOptions, Checklist, Verdict, check_component};
use toolhost::{ComponentConfig, Runtime};

use super::output::{print, print_json};
use super::{ExitStatus, GrantArgs, LimitArgs, OldHttpFlag};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The component file (.wasm)
    component: PathBuf,

    /// Print the checklist as JSON (for CI): every check with its verdict, detail and fix
    #[arg(long)]
    json: bool,

    #[command(flatten)]
    grants: GrantArgs,

    #[command(flatten)]
    old_http: OldHttpFlag,

    /// The limits of each call the checks make [defaults: 5s of CPU time, a 10s timeout]
    #[command(flatten)]
    limits: LimitArgs,
}

impl CheckArgs {
    pub async fn run(self, runtime: &Runtime) -> anyhow::Result<ExitStatus> {
        // Nothing to check is a usage error (exit 2), not a failed check.
        if !self.component.is_file() {
            anyhow::bail!(
                "{} is not a file; build the component first (`./build.sh` in a project that \
                 `host new` made)",
                self.component.display()
            );
        }
        let mut config = ComponentConfig::new(&self.component);
        config.grants = self.old_http.added_to(&self.grants).to_grants();
        let defaults = CheckOptions::default();
        let options = CheckOptions {
            limits: self.limits.config().apply(defaults.limits),
        };
        let checklist = check_component(runtime, config, &options).await;
        if self.json {
            print_json(&serde_json::json!({
                "component": checklist.component,
                "passed": checklist.passed(),
                "checks": checklist.items,
            }))?;
        } else {
            print(&to_text(&checklist))?;
        }
        Ok(if checklist.passed() {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        })
    }
}

/// One line per check (`ok`, `FAIL` or `-`), a failure's reason and fix under it, and a count.
fn to_text(checklist: &Checklist) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", checklist.component.display());
    for item in &checklist.items {
        let mark = match item.verdict {
            Verdict::Pass => "ok  ",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "-   ",
        };
        let subject = match &item.tool {
            Some(tool) => format!("{tool}: {}", item.check),
            None => item.check.to_string(),
        };
        let _ = writeln!(out, "  {mark}  {subject}: {}", item.detail);
        if let Some(fix) = &item.fix {
            let _ = writeln!(out, "        fix: {fix}");
        }
    }
    let failed = checklist.count(Verdict::Fail);
    let _ = writeln!(
        out,
        "{} check{}: {} passed, {failed} failed, {} not applicable",
        checklist.items.len(),
        if checklist.items.len() == 1 { "" } else { "s" },
        checklist.count(Verdict::Pass),
        checklist.count(Verdict::Skip)
    );
    out
}
