//! [`Host`]: the library's entry point. It turns a manifest (or a builder's settings) into
//! loaded tools, a model to talk to, and a loop with the manifest's settings applied: what
//! the `host` command does between its arguments and its output, for any application.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::OnceCell;

use crate::agent::{
    Agent, AgentConfig, AgentError, AgentOptions, ApprovalRules, AuditLog, Conversation, RunEnd,
    RunOptions, RunResult,
};
#[cfg(feature = "code-mode")]
use crate::code::{CodeMode, CodeModeConfig};
use crate::engine::component::ComponentConfig;
use crate::engine::runtime::{Runtime, RuntimeConfig};
use crate::error::{CallError, LoadError};
use crate::llm::{ModelConfig, Provider, ProviderError};
use crate::manifest::{Manifest, ManifestError, McpConfig, ToolOptions};
#[cfg(feature = "mcp-client")]
use crate::mcp::client::McpServerConfig;
use crate::native_tools::NativeTools;
use crate::sandbox::LimitsConfig;
use crate::source::{CallContext, ToolOutput};
use crate::source::{SourceOptions, ToolSource};
use crate::spec::ToolSpec;
use crate::toolbox::Toolbox;
use crate::toolbox::access::Access;

/// Loaded tools, the model they are offered to, and how the loop runs.
///
/// ```no_run
/// # async fn example() -> anyhow::Result<()> {
/// let host = toolhost::Host::load("example-tools/toolhost.toml").await?;
/// let output = host
///     .call("square_root", r#"{"x": 475695037565}"#, &Default::default())
///     .await?;
/// assert_eq!(output.text, "689706.4865324959");
/// let answer = host.run("What is the square root of 475695037565?").await?;
/// println!("{}", answer.text);
/// # Ok(()) }
/// ```
///
/// The model is connected at the first [`agent`](Self::agent) or [`run`](Self::run) (for the
/// local model, that starts its server), and stays connected as long as the host or an agent
/// it gave lives.
pub struct Host {
    toolbox: Arc<Toolbox>,
    model: ModelConfig,
    agent: AgentOptions,
    tools: BTreeMap<String, ToolOptions>,
    audit: Option<Arc<AuditLog>>,
    mcp: McpConfig,
    provider: OnceCell<Arc<dyn Provider>>,
    #[cfg(feature = "code-mode")]
    code_mode: Option<Arc<CodeMode>>,
}

/// Why a [`Host`] could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The manifest could not be read.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A tool source could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The model could not be connected (when asked to connect while loading).
    #[error("cannot connect to the model")]
    Model(#[source] ProviderError),
    /// The WebAssembly runtime could not be set up.
    #[error("cannot set up the WebAssembly runtime")]
    Runtime(#[source] anyhow::Error),
    /// The settings contradict each other or name something that is not there.
    #[error("{0}")]
    Config(String),
    /// The audit log could not be opened.
    #[error("cannot open the audit log {}", path.display())]
    Audit {
        /// The log file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
}

/// Sets up a [`Host`]: from a manifest, from components and sources given here, or both, with
/// overrides over the manifest's settings (what a command line's flags do).
#[derive(Default)]
#[must_use]
pub struct HostBuilder {
    manifest: Option<PathBuf>,
    runtime: Option<Runtime>,
    runtime_config: Option<RuntimeConfig>,
    components: Vec<ComponentConfig>,
    #[cfg(feature = "mcp-client")]
    mcp_servers: Vec<McpServerConfig>,
    sources: Vec<(Arc<dyn ToolSource>, SourceOptions)>,
    limits: LimitsConfig,
    model: ModelConfig,
    agent: AgentConfig,
    audit: Option<PathBuf>,
    mcp: McpConfig,
    connect: bool,
    code_mode: Option<bool>,
    #[cfg(feature = "code-mode")]
    code_runner: Option<PathBuf>,
}

impl HostBuilder {
    /// Reads the manifest at `path`: its components, model, loop settings and tool options.
    pub fn manifest(mut self, path: impl Into<PathBuf>) -> Self {
        self.manifest = Some(path.into());
        self
    }

    /// Runs components on `runtime` (shared with other hosts) instead of a new one.
    pub fn runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Sets up the host's own runtime this way (the default: [`RuntimeConfig::default`]).
    pub fn runtime_config(mut self, config: RuntimeConfig) -> Self {
        self.runtime_config = Some(config);
        self
    }

    /// Adds a component, besides the manifest's.
    pub fn component(mut self, config: ComponentConfig) -> Self {
        self.components.push(config);
        self
    }

    /// Adds an MCP server, besides the manifest's.
    #[cfg(feature = "mcp-client")]
    pub fn mcp_server(mut self, config: McpServerConfig) -> Self {
        self.mcp_servers.push(config);
        self
    }

    /// Adds a source of tools, besides the manifest's.
    pub fn source(mut self, source: Arc<dyn ToolSource>, options: SourceOptions) -> Self {
        self.sources.push((source, options));
        self
    }

    /// Adds the application's own functions as tools, under their own names. They run in
    /// this process, **not sandboxed** (see [`NativeTools`]).
    pub fn native(self, tools: NativeTools) -> Self {
        self.source(Arc::new(tools), SourceOptions::default())
    }

    /// Limits over every component's own (a command line's `--memory`, say); its `timeout`
    /// and `max_result` apply to MCP servers too.
    pub fn limits(mut self, limits: LimitsConfig) -> Self {
        self.limits = limits;
        self
    }

    /// The model, over the manifest's `[model]`: what this sets wins, and naming another
    /// provider drops the manifest's URL, key and model name (see
    /// [`ModelConfig::overridden_by`]).
    pub fn model(mut self, model: ModelConfig) -> Self {
        self.model = model;
        self
    }

    /// Loop settings, over the manifest's.
    pub fn agent(mut self, agent: AgentConfig) -> Self {
        self.agent = agent;
        self
    }

    /// Records every tool call to the audit log at `path` (over the manifest's `[audit]`).
    pub fn audit(mut self, path: impl Into<PathBuf>) -> Self {
        self.audit = Some(path.into());
        self
    }

    /// How `host mcp` serves the tools, over the manifest's `[mcp]` (the keys add up).
    pub fn mcp(mut self, mcp: McpConfig) -> Self {
        self.mcp = mcp;
        self
    }

    /// Connects the model while the tools load (for the local model: starts its server), so
    /// that a caller who will run the loop anyway does not wait for one and then the other.
    pub fn connect_model(mut self, connect: bool) -> Self {
        self.connect = connect;
        self
    }

    /// Turns code mode on or off, over the manifest's `[code_mode] enabled`: runs offer the
    /// model one tool whose program calls the others ([`RunOptions::code_mode`]).
    pub fn code_mode(mut self, on: bool) -> Self {
        self.code_mode = Some(on);
        self
    }

    /// The code runner of code mode, over the manifest's `[code_mode] runner`.
    #[cfg(feature = "code-mode")]
    pub fn code_runner(mut self, path: impl Into<PathBuf>) -> Self {
        self.code_runner = Some(path.into());
        self
    }

    /// Reads the manifest, loads every tool source, and (when asked) connects the model.
    pub async fn build(self) -> Result<Host, HostError> {
        let manifest = match &self.manifest {
            Some(path) => Manifest::load(path)?,
            None => Manifest::default(),
        };
        let runtime = match self.runtime {
            Some(runtime) => runtime,
            None => {
                Runtime::new(self.runtime_config.unwrap_or_default()).map_err(HostError::Runtime)?
            }
        };
        let model = ModelConfig::from(&manifest.model).overridden_by(self.model);
        let agent_config = AgentConfig::from(&manifest.model).merged(self.agent);
        let mut options = agent_config.options(model.kind());
        options.stop_at.extend(manifest.return_direct_tools());
        options.fail_run = manifest.fail_run_tools();
        options.approval = ApprovalRules::from_manifest(&manifest);
        let audit = match self.audit.or_else(|| manifest.audit_path()) {
            Some(path) => Some(Arc::new(
                AuditLog::open(&path).map_err(|source| HostError::Audit { path, source })?,
            )),
            None => None,
        };

        let configs = ComponentConfig::from_manifest(&manifest)
            .into_iter()
            .chain(self.components)
            .map(|mut config| {
                config.limits = self.limits.apply(config.limits);
                config
            });
        let mut builder = Toolbox::builder(&runtime).components(configs);
        #[cfg(feature = "mcp-client")]
        {
            builder = builder.mcp_servers(mcp_servers(&manifest, self.mcp_servers, &self.limits));
        }
        #[cfg(not(feature = "mcp-client"))]
        no_mcp_servers(&manifest)?;
        for (source, source_options) in self.sources {
            builder = builder.source(source, source_options);
        }
        let provider = OnceCell::new();
        let toolbox = if self.connect {
            let (toolbox, connected) = tokio::join!(builder.build(), model.connect());
            let toolbox = toolbox?;
            let _ = provider.set(connected.map_err(HostError::Model)?);
            toolbox
        } else {
            builder.build().await?
        };
        check_tool_options(&toolbox, &manifest.tools)?;
        check_stop_at(&toolbox, &options)?;
        let code_on = self.code_mode.unwrap_or(manifest.code_mode.enabled);
        #[cfg(feature = "code-mode")]
        let code_mode = match code_on {
            true => Some(load_code_mode(&runtime, &manifest, self.code_runner).await?),
            false => None,
        };
        #[cfg(not(feature = "code-mode"))]
        no_code_mode(code_on)?;
        let mcp = manifest.mcp.merged(self.mcp);
        #[cfg(feature = "code-mode")]
        let served: Vec<&str> = code_mode.iter().map(|code| code.tool()).collect();
        #[cfg(not(feature = "code-mode"))]
        let served: Vec<&str> = Vec::new();
        check_access(&toolbox, &served, &mcp)?;
        Ok(Host {
            toolbox: Arc::new(toolbox),
            model,
            agent: options,
            tools: manifest.tools,
            audit,
            mcp,
            provider,
            #[cfg(feature = "code-mode")]
            code_mode,
        })
    }
}

/// Code mode asked for (`on`) of a build without it: an error that says so.
#[cfg(not(feature = "code-mode"))]
fn no_code_mode(on: bool) -> Result<(), HostError> {
    if !on {
        return Ok(());
    }
    Err(HostError::Config(
        "code mode ([code_mode] enabled) needs toolhost's `code-mode` cargo feature, which \
         this build leaves out"
            .to_owned(),
    ))
}

/// Code mode as the manifest sets it up, with `runner` over its runner.
#[cfg(feature = "code-mode")]
async fn load_code_mode(
    runtime: &Runtime,
    manifest: &Manifest,
    runner: Option<PathBuf>,
) -> Result<Arc<CodeMode>, HostError> {
    let mut config = CodeModeConfig::from_manifest(manifest);
    if let Some(runner) = runner {
        config.runner = runner;
    }
    let path = config.runner.clone();
    CodeMode::load(runtime, config)
        .await
        .map(Arc::new)
        .map_err(|error| {
            HostError::Config(format!(
                "code mode cannot load its runner {}: {}; build it with `just tools`, or name \
                 another with [code_mode] runner or --code-runner",
                path.display(),
                crate::error::chain(&error)
            ))
        })
}

/// The manifest's MCP servers and the builder's, with the builder's `timeout` and `max_result`
/// over their own.
#[cfg(feature = "mcp-client")]
fn mcp_servers(
    manifest: &Manifest,
    added: Vec<McpServerConfig>,
    limits: &LimitsConfig,
) -> Vec<McpServerConfig> {
    let mut servers = McpServerConfig::from_manifest(manifest);
    servers.extend(added);
    for config in &mut servers {
        if let Some(timeout) = limits.timeout {
            config.timeout = timeout.0;
        }
        if let Some(max_result) = limits.max_result {
            config.max_result = usize::try_from(max_result.0).unwrap_or(usize::MAX);
        }
    }
    servers
}

/// Without the `mcp-client` feature a manifest's `[mcp_servers]` cannot be started: an error
/// that names the feature, rather than tools silently missing.
#[cfg(not(feature = "mcp-client"))]
fn no_mcp_servers(manifest: &Manifest) -> Result<(), LoadError> {
    match manifest.mcp_servers.keys().next() {
        Some(name) => Err(LoadError::FeatureOff {
            what: format!("the MCP server `{name}` of [mcp_servers]"),
            feature: "mcp-client",
        }),
        None => Ok(()),
    }
}

/// Every `[tools.NAME]` of the manifest must name a loaded tool, unless its source was left
/// out (then it is only a warning).
fn check_tool_options(
    toolbox: &Toolbox,
    tools: &BTreeMap<String, ToolOptions>,
) -> Result<(), HostError> {
    let catalog = toolbox.catalog();
    let unknown: BTreeSet<&String> = tools
        .keys()
        .filter(|name| catalog.get(name).is_none())
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = unknown.iter().map(|name| name.as_str()).collect();
    if !toolbox.skipped().is_empty() {
        tracing::warn!(
            "the manifest has options for {} but no loaded tool has that name (a source was left out)",
            names.join(", ")
        );
        return Ok(());
    }
    Err(HostError::Config(format!(
        "the manifest has options for [tools.{}], but no loaded tool has that name; the tools \
         are: {}",
        names.join("], [tools."),
        catalog.names().join(", ")
    )))
}

/// Every tool, prompt and resource `[[mcp.access]]` names must be loaded (or, a tool, be
/// among `served`, code mode's tool), unless a source was left out (then it is only a
/// warning).
fn check_access(toolbox: &Toolbox, served: &[&str], mcp: &McpConfig) -> Result<(), HostError> {
    let access = Access::new(&mcp.access);
    let Err(problem) = access.check(&toolbox.catalog(), served, &toolbox.offers()) else {
        return Ok(());
    };
    if toolbox.skipped().is_empty() {
        return Err(HostError::Config(problem));
    }
    tracing::warn!("{problem} (a source was left out)");
    Ok(())
}

/// Every tool `stop_at` names must be loaded.
fn check_stop_at(toolbox: &Toolbox, options: &AgentOptions) -> Result<(), HostError> {
    let catalog = toolbox.catalog();
    match options
        .stop_at
        .iter()
        .find(|name| catalog.get(name).is_none())
    {
        Some(name) if toolbox.skipped().is_empty() => Err(HostError::Config(format!(
            "stop_at names `{name}`, but no loaded tool has that name; the tools are: {}",
            catalog.names().join(", ")
        ))),
        _ => Ok(()),
    }
}

impl Host {
    /// Starts setting up a host.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// A host of the manifest at `path`, with its settings as they are.
    pub async fn load(path: impl Into<PathBuf>) -> Result<Self, HostError> {
        Self::builder().manifest(path).build().await
    }

    /// The tools.
    pub fn toolbox(&self) -> &Arc<Toolbox> {
        &self.toolbox
    }

    /// Every tool's spec, in source order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.toolbox.specs()
    }

    /// The manifest's options for tool `name`, if it has any.
    pub fn tool_options(&self, name: &str) -> Option<&ToolOptions> {
        self.tools.get(name)
    }

    /// How the tools are served over MCP (the manifest's `[mcp]`, with the builder's keys).
    pub fn mcp_config(&self) -> &McpConfig {
        &self.mcp
    }

    /// Calls tool `name` with `arguments` (a JSON object as text), in its sandbox when it is a
    /// component's. See [`Toolbox::call`].
    pub async fn call(
        &self,
        name: &str,
        arguments: &str,
        context: &CallContext,
    ) -> Result<ToolOutput, CallError> {
        self.toolbox.call(name, arguments, context).await
    }

    /// Stops what the tool sources run (MCP servers' processes), politely; see
    /// [`Toolbox::shutdown`]. Dropping the host stops them too, at once.
    pub async fn shutdown(&self) {
        self.toolbox.shutdown().await;
    }

    /// The model settings in force (the manifest's, overridden by the builder's).
    pub fn model_config(&self) -> &ModelConfig {
        &self.model
    }

    /// The loop settings in force.
    pub fn agent_options(&self) -> &AgentOptions {
        &self.agent
    }

    /// An agent: the model (connected now if it is not yet), every tool, and the loop
    /// settings in force.
    pub async fn agent(&self) -> Result<Agent, ProviderError> {
        let provider = self
            .provider
            .get_or_try_init(|| self.model.connect())
            .await?
            .clone();
        let agent = Agent::new(provider, self.toolbox.clone(), self.agent.clone());
        Ok(match &self.audit {
            Some(audit) => agent.with_audit(audit.clone()),
            None => agent,
        })
    }

    /// Code mode, when it is on ([`HostBuilder::code_mode`], `[code_mode] enabled`).
    #[cfg(feature = "code-mode")]
    pub fn code_mode(&self) -> Option<&Arc<CodeMode>> {
        self.code_mode.as_ref()
    }

    /// The options of a run as this host's settings make them: code mode when it is on,
    /// everything else at its default.
    pub fn run_options(&self) -> RunOptions {
        RunOptions {
            #[cfg(feature = "code-mode")]
            code_mode: self.code_mode.clone(),
            ..RunOptions::default()
        }
    }

    /// The audit log every agent of this host writes to, if there is one.
    pub fn audit_log(&self) -> Option<&Arc<AuditLog>> {
        self.audit.as_ref()
    }

    /// Asks the model `question`, running the tools it calls, until it answers. A call that
    /// needs approval ends it with [`AgentError::ApprovalNeeded`], one that asks for input
    /// with [`AgentError::InputNeeded`]: there is no one to ask here; [`Host::agent`] and
    /// [`Agent::run`] pause instead.
    pub async fn run(&self, question: &str) -> Result<RunResult, AgentError> {
        let agent = self.agent().await?;
        let mut conversation = Conversation::new();
        conversation.push_user(question);
        let result = agent
            .run(&mut conversation, &self.run_options(), &mut |_| {})
            .await?;
        match (result.end, result.pending.first(), result.asking.first()) {
            (RunEnd::Paused, Some(pending), _) => Err(AgentError::ApprovalNeeded {
                tool: pending.tool.clone(),
            }),
            (RunEnd::Paused, None, Some(asking)) => Err(AgentError::InputNeeded {
                tool: asking.tool.clone(),
            }),
            _ => Ok(result),
        }
    }
}

/// What a build without the optional features says of a manifest that needs one of them.
#[cfg(all(test, any(not(feature = "oci"), not(feature = "mcp-client"))))]
mod without_features {
    use super::*;

    /// The error chain of loading `manifest` (nothing is compiled or started before it fails).
    async fn failure(manifest: &str) -> String {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, manifest).expect("written");
        match Host::builder().manifest(&path).build().await {
            Ok(_) => panic!("the manifest loaded"),
            Err(error) => crate::error::chain(&error),
        }
    }

    #[cfg(not(feature = "oci"))]
    #[tokio::test]
    async fn an_oci_component_names_the_oci_feature() {
        let chain = failure("[components.calc]\npath = \"oci://r.example/tools/calc:1\"\n").await;
        assert!(
            chain.contains(
                "component `calc` (oci://r.example/tools/calc:1) needs toolhost's `oci` feature"
            ),
            "{chain}"
        );
    }

    #[cfg(not(feature = "mcp-client"))]
    #[tokio::test]
    async fn an_mcp_server_names_the_mcp_client_feature() {
        let chain = failure("[mcp_servers.time]\ncommand = [\"mcp-server-time\"]\n").await;
        assert!(
            chain.contains(
                "the MCP server `time` of [mcp_servers] needs toolhost's `mcp-client` feature"
            ),
            "{chain}"
        );
    }
}
