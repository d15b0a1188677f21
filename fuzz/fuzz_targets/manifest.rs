//! A manifest (`toolhost.toml`): parsed, then turned into everything a host makes of it.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use toolhost::agent::{AgentConfig, ApprovalRules};
use toolhost::llm::ModelConfig;
use toolhost::mcp::client::McpServerConfig;
use toolhost::{ComponentConfig, Limits, Manifest};

fuzz_target!(|text: &str| {
    let Ok(manifest) = Manifest::parse(text, Path::new("/fuzz/toolhost.toml")) else {
        return;
    };
    let _ = manifest.limits.apply(Limits::default());
    let _ = ComponentConfig::from_manifest(&manifest);
    let _ = McpServerConfig::from_manifest(&manifest);
    let model = ModelConfig::from(&manifest.model);
    let _ = AgentConfig::from(&manifest.model).options(model.kind());
    let _ = ApprovalRules::from_manifest(&manifest);
    let _ = (manifest.return_direct_tools(), manifest.fail_run_tools());
    let _ = (manifest.audit_path(), manifest.base_dir());
});
