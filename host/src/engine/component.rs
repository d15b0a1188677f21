//! One tool component as a tool source: read, compile (or take from the cache), check that it
//! targets the toolhost world, pre-instantiate, and ask it for its tools.
//!
//! A component whose tools the compile cache already knows is not compiled, nor even read:
//! its tools come from the cache, and its code is loaded from the cache at its first call (or
//! at [`LoadedComponent::prepare`]). That is what makes a start with many large components
//! take milliseconds, and what lets a run that offers a few tools compile only theirs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio::sync::OnceCell;
use wasmtime::component::{Component, types::ComponentItem};

use super::{describe, offered};
use crate::arguments::Arguments;
use crate::caller::Caller;
use crate::engine::bindings::{CONTRACTS, Contract, ToolInstancePre, wit};
use crate::engine::cache;
use crate::engine::cache::{CompileEvent, CompileSource, ContentKey, Described};
use crate::engine::call;
use crate::engine::call::CallPhases;
use crate::engine::component_file::{Pulled, component_file, content_key_of, is_oci};
use crate::engine::runtime::Runtime;
use crate::engine::spare_instance::Spare;
use crate::error::{CallError, LoadError};
use crate::manifest::Manifest;
#[cfg(feature = "oci")]
use crate::oci;
#[cfg(feature = "oci")]
use crate::oci::PullPolicy;
use crate::offers::{OfferError, Offers, PromptInput, PromptOutcome, ResourceContents};

use crate::sandbox::{Grants, Limits, Sandbox};
use crate::source::{CallContext, ToolOutput};
use crate::source::{Origin, SourceOptions, ToolSource};
use crate::spec::ToolSpec;

/// What to load, and under which grants and limits it runs.
#[derive(Debug, Clone)]
pub struct ComponentConfig {
    /// A short name for messages (the manifest key, or the file stem).
    pub name: String,
    /// The component file.
    pub path: PathBuf,
    /// What its tools may use.
    pub grants: Grants,
    /// The limits of every call.
    pub limits: Limits,
    /// Which of its tools are offered, and under which names.
    pub options: SourceOptions,
    /// Whether a failure to load it fails the whole load (the default), or only leaves it out
    /// with a warning.
    pub required: bool,
    /// What a pull checks, when `path` is an `oci://` reference.
    #[cfg(feature = "oci")]
    pub oci: PullPolicy,
}

impl ComponentConfig {
    /// A component at `path` with nothing granted, the default limits, every tool offered
    /// under its own name, and required.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        #[cfg(feature = "oci")]
        let short_name = path.to_str().and_then(oci::short_name);
        #[cfg(not(feature = "oci"))]
        let short_name = None;
        let name = short_name
            .or_else(|| {
                path.file_stem()
                    .map(|stem| stem.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| path.display().to_string());
        Self {
            name,
            path,
            grants: Grants::default(),
            limits: Limits::default(),
            options: SourceOptions::default(),
            required: true,
            #[cfg(feature = "oci")]
            oci: PullPolicy::default(),
        }
    }

    /// What to load for each component of `manifest`: paths resolved against its directory,
    /// its `[limits]` over the defaults and each component's over those.
    pub fn from_manifest(manifest: &Manifest) -> Vec<Self> {
        let base = manifest.base_dir();
        let defaults = manifest.limits.apply(Limits::default());
        manifest
            .components
            .iter()
            .map(|(name, entry)| {
                let mut grants = entry.grants.clone();
                grants.resolve_paths(&base);
                Self {
                    name: name.clone(),
                    path: if is_oci(&entry.path) {
                        entry.path.clone()
                    } else {
                        base.join(&entry.path)
                    },
                    #[cfg(feature = "oci")]
                    oci: oci::policy_for(manifest, entry),
                    grants,
                    limits: entry.limits.apply(defaults),
                    options: SourceOptions {
                        prefix: entry.prefix.clone(),
                        include: entry.tools.clone(),
                        exclude: entry.exclude.clone(),
                        resources: entry.resources.clone(),
                        exclude_resources: entry.exclude_resources.clone(),
                        prompts: entry.prompts.clone(),
                        exclude_prompts: entry.exclude_prompts.clone(),
                    },
                    required: entry.required,
                }
            })
            .collect()
    }
}

/// A loaded tool component, ready to be called.
pub struct LoadedComponent {
    config: ComponentConfig,
    origin: Origin,
    runtime: Runtime,
    sandbox: Sandbox,
    tools: Vec<ToolSpec>,
    imports: Vec<String>,
    contract: Contract,
    /// Its resources, templates and prompts.
    offers: Offers,
    /// The compiled output schema of each tool (in `tools`' order), when it has one.
    outputs: Vec<std::sync::OnceLock<Option<jsonschema::Validator>>>,
    key: ContentKey,
    source: CompileSource,
    /// The file its code is read from: `config.path`, or the pulled copy in the store.
    file: PathBuf,
    /// What was pulled, for an `oci://` component.
    #[cfg_attr(not(feature = "oci"), allow(dead_code))]
    pulled: Option<Pulled>,
    load_time: Duration,
    /// The pre-instantiated code, loaded at the first call when the tools came from the cache.
    code: OnceCell<ToolInstancePre>,
    /// The instance the next call runs in, made after the last one.
    spare: Arc<Spare>,
}

impl std::fmt::Debug for LoadedComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedComponent")
            .field("name", &self.config.name)
            .field("path", &self.config.path)
            .field(
                "tools",
                &self.tools.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl LoadedComponent {
    /// Loads the component `config` names.
    pub async fn load(runtime: &Runtime, config: ComponentConfig) -> Result<Self, LoadError> {
        let started = Instant::now();
        let sandbox = Sandbox::new(&config.name, &config.grants, config.limits)?;
        #[cfg(feature = "oci")]
        let file = component_file(&config.name, &config.path, &config.oci).await;
        #[cfg(not(feature = "oci"))]
        let file = component_file(&config.name, &config.path).await;
        let (path, pulled) = file?;
        let (key, bytes) = content_key_of(runtime, &path, pulled.as_ref()).await?;
        let origin = Origin::Component {
            name: config.name.clone(),
            path: config.path.clone(),
            sha256: key.sha256.clone(),
        };
        let cached = runtime.cache().and_then(|cache| cache.described(&key));
        let (described, code, source) = match cached {
            Some(described) => (described, OnceCell::new(), CompileSource::Cache),
            None => {
                let (pre, imports, source) = compile(runtime, &path, &key, bytes).await?;
                let describe_sandbox = Sandbox::empty(config.limits);
                let tools = call::describe(runtime, &pre, &describe_sandbox)
                    .await
                    .map_err(|source| LoadError::Describe {
                        path: path.clone(),
                        source: Box::new(source),
                    })?;
                let offers = offered::list(runtime, &pre, &describe_sandbox)
                    .await
                    .map_err(|source| LoadError::Describe {
                        path: path.clone(),
                        source: Box::new(source),
                    })?;
                let described = Described {
                    tools: tools.iter().map(Into::into).collect(),
                    imports,
                    contract: pre.contract(),
                    offers,
                };
                if let Some(cache) = runtime.cache() {
                    cache.store_described(&key, &described);
                }
                (described, OnceCell::new_with(Some(pre)), source)
            }
        };
        let tools = check_tools(&path, &origin, described.tools)?;
        let offers = config.options.keep_offers(&origin, described.offers)?;
        let outputs = (0..tools.len()).map(|_| Default::default()).collect();
        let spare = Spare::new(runtime.clone(), sandbox.clone());
        Ok(Self {
            config,
            origin,
            runtime: runtime.clone(),
            sandbox,
            tools,
            imports: described.imports,
            contract: described.contract,
            offers,
            outputs,
            key,
            source,
            file: path,
            pulled,
            load_time: started.elapsed(),
            code,
            spare,
        })
    }

    /// Loads the component's code now, if its tools came from the cache, so that its first
    /// call does not wait for it.
    pub async fn prepare(&self) -> Result<(), LoadError> {
        self.code().await.map(|_| ())
    }

    /// The sandbox a resource read, prompt or completion (`what` names it) runs in for
    /// `caller`: the component's, with each directory granted per caller the caller's own,
    /// as in its calls; without a caller such a directory is denied.
    fn offer_sandbox(
        &self,
        what: &str,
        caller: Option<&Caller>,
    ) -> Result<std::borrow::Cow<'_, Sandbox>, OfferError> {
        self.sandbox
            .for_caller(what, caller)
            .map_err(|error| OfferError::Failed(error.to_string()))
    }

    async fn code(&self) -> Result<&ToolInstancePre, LoadError> {
        self.code
            .get_or_try_init(|| async {
                let (pre, _, _) = compile(&self.runtime, &self.file, &self.key, None).await?;
                Ok(pre)
            })
            .await
    }

    /// The name given to the component.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The component file (or the `oci://` reference it was pulled from).
    pub fn path(&self) -> &Path {
        &self.config.path
    }

    /// What was pulled, for a component from an OCI registry (its digest, its signature).
    #[cfg(feature = "oci")]
    pub fn pulled(&self) -> Option<&oci::Pulled> {
        self.pulled.as_ref()
    }

    /// The SHA-256 of the component file, hex.
    pub fn sha256(&self) -> &str {
        &self.key.sha256
    }

    /// What the component's tools are granted.
    pub fn grants(&self) -> &Grants {
        &self.config.grants
    }

    /// The limits of every call.
    pub fn limits(&self) -> &Limits {
        &self.config.limits
    }

    /// How it was configured.
    pub fn config(&self) -> &ComponentConfig {
        &self.config
    }

    /// The tools it offers, under its own names.
    pub fn tools(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter()
    }

    /// The interfaces it imports (WASI and wasi:http ones), by full name.
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// The version of the tool contract it targets.
    pub fn contract(&self) -> Contract {
        self.contract
    }

    /// Its resources, resource templates and prompts (empty for most components).
    pub fn offered(&self) -> &Offers {
        &self.offers
    }

    /// The size of the component file in bytes.
    pub fn size(&self) -> u64 {
        self.key.size
    }

    /// Whether its tools came from the compile cache or it was compiled.
    pub fn compile_source(&self) -> CompileSource {
        self.source
    }

    /// How long loading took.
    pub fn load_time(&self) -> Duration {
        self.load_time
    }

    /// Whether a spare instance is ready for the next call: made, never called, after an
    /// earlier call ([`RuntimeConfig::spare_instances`](crate::engine::runtime::RuntimeConfig::spare_instances)).
    pub fn has_spare_instance(&self) -> bool {
        self.spare.is_ready()
    }

    /// Calls tool `tool` (by the component's own name for it; the arguments are not checked
    /// against its schema) as every call runs, and measures where the time went: the host's
    /// setup, instantiation, the component's own start-up code, the call, the teardown.
    pub async fn call_profiled(
        &self,
        tool: &str,
        arguments: &str,
        context: &CallContext,
    ) -> (Result<ToolOutput, CallError>, CallPhases) {
        let mut phases = CallPhases::default();
        let result = self
            .run_call(tool, arguments, context, Some(&mut phases))
            .await;
        (result, phases)
    }

    async fn run_call(
        &self,
        tool: &str,
        arguments: &str,
        context: &CallContext,
        phases: Option<&mut CallPhases>,
    ) -> Result<ToolOutput, CallError> {
        let pre = self.code().await.map_err(|error| CallError::Instantiate {
            tool: tool.to_owned(),
            source: error.into(),
        })?;
        // A directory per caller makes the caller's own sandbox, whose store is never made
        // ahead (a spare instance's store is the component's).
        let sandbox = self.sandbox.for_caller(tool, context.caller.as_deref())?;
        let spare = (!self.sandbox.has_caller_dirs()).then_some(&self.spare);
        let output = self.output_validator(tool);
        call::call_tool(
            &self.runtime,
            pre,
            &sandbox,
            spare,
            tool,
            arguments,
            context,
            output,
            phases,
        )
        .await
    }

    /// The compiled output schema of a 0.2 tool that declares one, compiled at the tool's
    /// first call. A 0.1 tool's result is text (`host mcp` checks its JSON), and so is a
    /// result whose schema is `"type": "string"`: neither has structured content to check.
    fn output_validator(&self, tool: &str) -> Option<&jsonschema::Validator> {
        if self.contract == Contract::V0_1 {
            return None;
        }
        let (at, spec) = self
            .tools
            .iter()
            .enumerate()
            .find(|(_, spec)| spec.name == tool)?;
        let schema = spec
            .output_schema
            .as_ref()
            .filter(|schema| schema.get("type").and_then(|t| t.as_str()) != Some("string"))?;
        self.outputs[at]
            .get_or_init(|| {
                // `describe::check` compiled it once already: this cannot fail.
                jsonschema::validator_for(schema)
                    .inspect_err(|e| tracing::error!(tool, "output schema: {e}"))
                    .ok()
            })
            .as_ref()
    }
}

impl ToolSource for LoadedComponent {
    fn origin(&self) -> &Origin {
        &self.origin
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.tools.clone()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: &'a Arguments,
        context: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, CallError>> {
        Box::pin(self.run_call(tool, arguments.text(), context, None))
    }

    fn grants(&self) -> Option<&Grants> {
        Some(&self.config.grants)
    }

    fn offers(&self) -> Option<&Offers> {
        Some(&self.offers).filter(|offers| !offers.is_empty())
    }

    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, OfferError>> {
        Box::pin(async move {
            let pre = self
                .code()
                .await
                .map_err(|e| OfferError::Failed(e.to_string()))?;
            let sandbox = self.offer_sandbox(uri, caller)?;
            offered::read(&self.runtime, pre, &sandbox, uri).await
        })
    }

    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a BTreeMap<String, String>,
        input: &'a PromptInput,
        caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<PromptOutcome, OfferError>> {
        Box::pin(async move {
            let pre = self
                .code()
                .await
                .map_err(|e| OfferError::Failed(e.to_string()))?;
            let sandbox = self.offer_sandbox(name, caller)?;
            offered::get(&self.runtime, pre, &sandbox, name, arguments, input).await
        })
    }

    fn complete<'a>(
        &'a self,
        prompt: &'a str,
        argument: &'a str,
        value: &'a str,
        caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<String>, OfferError>> {
        Box::pin(async move {
            let pre = self
                .code()
                .await
                .map_err(|e| OfferError::Failed(e.to_string()))?;
            let sandbox = self.offer_sandbox(prompt, caller)?;
            offered::complete(&self.runtime, pre, &sandbox, prompt, argument, value).await
        })
    }
}

/// Compiles the component (or loads it from the cache), checks its world and imports, and
/// pre-instantiates it. Returns what it imports too.
async fn compile(
    runtime: &Runtime,
    path: &Path,
    key: &ContentKey,
    bytes: Option<Vec<u8>>,
) -> Result<(ToolInstancePre, Vec<String>, CompileSource), LoadError> {
    let (component, source) = compiled(runtime, path, key, bytes).await?;
    let (contract, imports) = check_exports(runtime, path, &component)?;
    let pre = runtime
        .linker()
        .instantiate_pre(&component)
        .map_err(|e| LoadError::WrongWorld {
            path: path.to_owned(),
            problem: format!(
                "{e:#}; a tool component may import only WASI 0.2 interfaces and wasi:http"
            ),
        })?;
    let pre = ToolInstancePre::new(contract, pre).map_err(|e| LoadError::WrongWorld {
        path: path.to_owned(),
        problem: format!(
            "its `{}` export does not match the WIT of {contract} ({e:#}); rebuild it against \
             that version of the WIT (wit/tool.wit for the newest)",
            contract.interface()
        ),
    })?;
    Ok((pre, imports, source))
}

/// The compiled form of the component at `path` (whose content is `key`): from the cache, or
/// compiled now (off the async threads), telling the runtime's compile observer.
pub(crate) async fn compiled(
    runtime: &Runtime,
    path: &Path,
    key: &ContentKey,
    bytes: Option<Vec<u8>>,
) -> Result<(Component, CompileSource), LoadError> {
    let file = path.to_owned();
    let runtime = runtime.clone();
    let path = path.to_owned();
    let key = key.clone();
    tokio::task::spawn_blocking(move || {
        let observer = runtime.compile_observer();
        let notify = |event: CompileEvent<'_>| {
            if let Some(observer) = &observer {
                observer(event);
            }
        };
        match runtime.cache() {
            Some(cache) => cache.load_or_compile(runtime.engine(), &path, &key, bytes, &notify),
            None => {
                let bytes = match bytes {
                    Some(bytes) => bytes,
                    None => {
                        crate::file::read(&path, crate::file::MAX_COMPONENT_SIZE, "a component")
                            .map_err(|source| LoadError::Read {
                                path: path.clone(),
                                source,
                            })?
                    }
                };
                cache::compile(runtime.engine(), &path, &bytes, &notify)
                    .map(|(component, took)| (component, CompileSource::Compiled { took }))
            }
        }
    })
    .await
    .map_err(|e| LoadError::Compile {
        path: file,
        source: anyhow::anyhow!("the compile task failed: {e}"),
    })?
}

/// Checks the specs `describe` returned, in order.
fn check_tools(
    path: &Path,
    origin: &Origin,
    specs: Vec<cache::WitSpec>,
) -> Result<Vec<ToolSpec>, LoadError> {
    let invalid = |tool: String, problem: String| LoadError::InvalidSpec {
        origin: origin.to_string(),
        tool,
        problem,
    };
    if specs.is_empty() {
        return Err(LoadError::WrongWorld {
            path: path.to_owned(),
            problem: "`describe` returned no tools".to_owned(),
        });
    }
    let mut tools: Vec<ToolSpec> = Vec::with_capacity(specs.len());
    for stored in specs {
        let raw = wit::ToolSpec::try_from(stored)
            .map_err(|problem| invalid(String::new(), format!("(cached): {problem}")))?;
        let name = raw.name.clone();
        let spec = describe::check(raw).map_err(|problem| invalid(name.clone(), problem))?;
        if tools.iter().any(|t| t.name == spec.name) {
            return Err(invalid(name, "is described twice".to_owned()));
        }
        tools.push(spec);
    }
    Ok(tools)
}

/// Checks that the component exports the tools interface of a contract version this host
/// speaks, and returns that version and what the component imports.
fn check_exports(
    runtime: &Runtime,
    path: &Path,
    component: &Component,
) -> Result<(Contract, Vec<String>), LoadError> {
    let engine = runtime.engine();
    let ty = component.component_type();
    let exports: Vec<String> = ty
        .exports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    let newest = CONTRACTS[0].interface();
    let Some(contract) = CONTRACTS
        .into_iter()
        .find(|contract| exports.iter().any(|name| name == contract.interface()))
    else {
        let interface = newest.split('@').next().unwrap_or(newest);
        let spoken: Vec<&str> = CONTRACTS.iter().map(|c| c.interface()).collect();
        let problem = match exports.iter().find(|name| name.starts_with(interface)) {
            Some(other) => format!(
                "it exports `{other}`, but this host speaks {}; rebuild it against \
                 wit/tool.wit",
                spoken.join(" and ")
            ),
            None if exports.is_empty() => {
                format!("it exports nothing; it must export `{newest}`")
            }
            None => format!(
                "it does not export `{newest}` (it exports {}); build it for the `toolbox` \
                 world of wit/tool.wit",
                exports.join(", ")
            ),
        };
        return Err(LoadError::WrongWorld {
            path: path.to_owned(),
            problem,
        });
    };
    let imports = ty
        .imports(engine)
        .filter(|(_, item)| matches!(item.ty, ComponentItem::ComponentInstance(_)))
        .map(|(name, _)| name.to_owned())
        .collect();
    Ok((contract, imports))
}
