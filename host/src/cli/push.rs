//! `host push`: upload a component to an OCI registry, in the CNCF wasm artifact layout.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use serde_json::json;
use toolhost::oci::{self, ComponentRef};

use super::ExitStatus;
use super::output::{print_json, println};
use super::pull::RegistryArgs;

#[derive(Debug, Args)]
pub struct PushArgs {
    /// The component file (.wasm)
    component: PathBuf,

    /// Where to: oci://REGISTRY/REPO:TAG
    reference: String,

    #[command(flatten)]
    registry: RegistryArgs,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

impl PushArgs {
    pub async fn run(self) -> anyhow::Result<ExitStatus> {
        let reference = ComponentRef::parse(&self.reference)?;
        let pushed = oci::push(
            &self.component,
            &reference,
            self.registry.plain_http,
            self.registry.timeout.0,
        )
        .await
        .with_context(|| format!("cannot push {} to {reference}", self.component.display()))?;
        if self.json {
            print_json(&json!({
                "reference": pushed.reference.to_string(),
                "digest": pushed.digest,
                "component_digest": pushed.layer_digest,
                "size": pushed.size,
            }))?;
        } else {
            println(&format!(
                "pushed {} ({})\n  {}",
                self.component.display(),
                toolhost::units::format_bytes(pushed.size),
                pushed.reference
            ))?;
        }
        Ok(ExitStatus::Success)
    }
}
