//! `host sign`: add a cosign-compatible signature to a component in a registry.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use toolhost::oci::{self, ComponentRef};

use super::ExitStatus;
use super::output::println;
use super::pull::RegistryArgs;

#[derive(Debug, Args)]
pub struct SignArgs {
    /// The component: oci://REGISTRY/REPO:TAG or oci://REGISTRY/REPO@sha256:DIGEST
    reference: String,

    /// The private key (PEM: PKCS#8 or SEC1, P-256, unencrypted); verifiers name its public
    /// half (`openssl pkey -in KEY -pubout`)
    #[arg(long, value_name = "FILE")]
    key: PathBuf,

    #[command(flatten)]
    registry: RegistryArgs,
}

impl SignArgs {
    pub async fn run(self) -> anyhow::Result<ExitStatus> {
        let reference = ComponentRef::parse(&self.reference)?;
        let (signed, tag) = oci::sign(
            &reference,
            &self.key,
            self.registry.plain_http,
            self.registry.timeout.0,
        )
        .await
        .with_context(|| format!("cannot sign {reference}"))?;
        println(&format!("signed {signed}\n  signature: {tag}"))?;
        Ok(ExitStatus::Success)
    }
}
