//! `host lock`: pin every `oci://` component of a manifest to the digest its tag points to
//! now, in `toolhost.lock` beside it.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use toolhost::oci::{self, ComponentRef, Lock, Store};
use toolhost::{Manifest, units::HumanDuration};

use super::ExitStatus;
use super::output::println;

#[derive(Debug, Args)]
pub struct LockArgs {
    /// The manifest
    #[arg(default_value = "toolhost.toml")]
    manifest: PathBuf,

    /// How long each pull may take (over the manifest's [oci] timeout)
    #[arg(long, value_name = "DURATION")]
    timeout: Option<HumanDuration>,
}

impl LockArgs {
    pub async fn run(self) -> anyhow::Result<ExitStatus> {
        let manifest = Manifest::load(&self.manifest)?;
        let store = Store::open_default()?;
        let mut lock = Lock::new();
        let mut lines = Vec::new();
        for (name, entry) in &manifest.components {
            let Some(text) = entry.path.to_str().filter(|text| oci::is_oci(text)) else {
                continue;
            };
            let reference = ComponentRef::parse(text)
                .with_context(|| format!("component `{name}` in {}", self.manifest.display()))?;
            // Resolved as the registry has it now (and checked, signature included); the old
            // lock is what is being replaced, so it pins nothing here.
            let mut policy = oci::policy_for(&manifest, entry);
            policy.lock = None;
            if let Some(timeout) = self.timeout {
                policy.timeout = Some(timeout.0);
            }
            let pulled = oci::pull(&reference, &policy, &store)
                .await
                .with_context(|| format!("cannot lock component `{name}`"))?;
            lock.set(&reference, &pulled.digest);
            lines.push(format!("  {reference} = {}", pulled.digest));
        }
        let path = oci::lock_path(&self.manifest);
        if lock.is_empty() {
            println(&format!(
                "{} names no oci:// component; nothing to lock",
                self.manifest.display()
            ))?;
            return Ok(ExitStatus::Success);
        }
        lock.write(&path)?;
        println(&format!(
            "{}: {} pinned\n{}",
            path.display(),
            lock.len(),
            lines.join("\n")
        ))?;
        Ok(ExitStatus::Success)
    }
}
