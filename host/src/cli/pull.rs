//! `host pull`: fetch a component from an OCI registry into the cache, verified.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use serde_json::json;
use toolhost::oci::{self, ComponentRef, PullPolicy, Store};
use toolhost::units::HumanDuration;

use super::ExitStatus;
use super::output::{print_json, println};

/// How to reach a registry.
#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    /// Speak plain HTTP to the registry although it is not on this machine (loopback
    /// registries always may)
    #[arg(long)]
    pub plain_http: bool,

    /// How long the whole transfer may take
    #[arg(long, value_name = "DURATION", default_value = "2m")]
    pub timeout: HumanDuration,
}

#[derive(Debug, Args)]
pub struct PullArgs {
    /// The component: oci://REGISTRY/REPO:TAG or oci://REGISTRY/REPO@sha256:DIGEST
    reference: String,

    /// Refuse it unless its cosign signature verifies with this public key (PEM)
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,

    #[command(flatten)]
    registry: RegistryArgs,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

impl PullArgs {
    pub async fn run(self) -> anyhow::Result<ExitStatus> {
        let reference = ComponentRef::parse(&self.reference)?;
        let policy = PullPolicy {
            plain_http: self.registry.plain_http,
            require_signature: self.key.is_some(),
            key: self.key.clone(),
            lock: None,
            timeout: Some(self.registry.timeout.0),
        };
        let store = Store::open_default()?;
        let pulled = oci::pull(&reference, &policy, &store)
            .await
            .with_context(|| format!("cannot pull {reference}"))?;
        let size = std::fs::metadata(&pulled.path).map(|m| m.len()).ok();
        if self.json {
            print_json(&json!({
                "reference": pulled.reference.to_string(),
                "digest": pulled.digest,
                "component_digest": pulled.layer_digest,
                "path": pulled.path,
                "size": size,
                "from_cache": pulled.offline,
                "signature_verified": pulled.verified,
            }))?;
        } else {
            let size = size.map(toolhost::units::format_bytes).unwrap_or_default();
            let from = if pulled.offline {
                " (from the cache: the registry was not reached)"
            } else {
                ""
            };
            let signed = if pulled.verified {
                ", signature verified"
            } else {
                ""
            };
            println(&format!(
                "{}\n  {size}{signed}{from}\n  {}",
                pulled.reference,
                pulled.path.display()
            ))?;
        }
        Ok(ExitStatus::Success)
    }
}
