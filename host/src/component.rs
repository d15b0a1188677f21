//! Loading one tool component: read, compile (or load from the cache), check that it targets
//! the toolhost world, pre-instantiate, and ask it for its tools.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{Component, types::ComponentItem};

use crate::bindings::{TOOLS_INTERFACE, ToolboxPre};
use crate::cache::{self, CompileEvent, CompileSource};
use crate::call;
use crate::sandbox::{Grants, Limits, Sandbox, StoreState};
use crate::spec::{self, ToolSpec};
use crate::{LoadError, Runtime};

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
}

impl ComponentConfig {
    /// A component at `path` with nothing granted and the default limits.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let name = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        Self {
            name,
            path,
            grants: Grants::default(),
            limits: Limits::default(),
        }
    }
}

/// Told when a component has to be compiled (it is not in the cache) and when that is over,
/// so a command-line front end can show progress: compiling a 15 MB component takes seconds.
pub type CompileObserver = Arc<dyn Fn(CompileEvent<'_>) + Send + Sync>;

/// A loaded tool component, ready to be called.
pub struct LoadedComponent {
    pub(crate) config: ComponentConfig,
    pub(crate) pre: ToolboxPre<StoreState>,
    pub(crate) sandbox: Sandbox,
    pub(crate) tools: Vec<(ToolSpec, Arc<jsonschema::Validator>)>,
    imports: Vec<String>,
    size: u64,
    source: CompileSource,
    load_time: Duration,
}

impl std::fmt::Debug for LoadedComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedComponent")
            .field("name", &self.config.name)
            .field("path", &self.config.path)
            .field(
                "tools",
                &self.tools.iter().map(|(s, _)| &s.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl LoadedComponent {
    /// Loads the component `config` names.
    pub async fn load(
        runtime: &Runtime,
        config: ComponentConfig,
        on_compile: Option<CompileObserver>,
    ) -> Result<Self, LoadError> {
        let started = Instant::now();
        let path = config.path.clone();
        let bytes = tokio::fs::read(&path)
            .await
            .map_err(|source| LoadError::Read {
                path: path.clone(),
                source,
            })?;
        check_header(&path, &bytes)?;
        let size = bytes.len() as u64;
        let sandbox = Sandbox::new(&config.name, &config.grants, config.limits)?;

        let (component, source) = {
            let runtime = runtime.clone();
            let task_path = path.clone();
            tokio::task::spawn_blocking(move || {
                let path = task_path;
                let notify = |event: CompileEvent<'_>| {
                    if let Some(observer) = &on_compile {
                        observer(event);
                    }
                };
                match runtime.cache() {
                    Some(cache) => cache.load_or_compile(runtime.engine(), &path, &bytes, &notify),
                    None => cache::compile(runtime.engine(), &path, &bytes, &notify)
                        .map(|(component, took)| (component, CompileSource::Compiled { took })),
                }
            })
            .await
            .map_err(|e| LoadError::Compile {
                path: path.clone(),
                source: anyhow::anyhow!("the compile task failed: {e}"),
            })?
            .map_err(|source| LoadError::Compile {
                path: path.clone(),
                source,
            })?
        };

        let imports = check_exports(runtime, &path, &component)?;
        let pre =
            runtime
                .linker()
                .instantiate_pre(&component)
                .map_err(|e| LoadError::WrongWorld {
                    path: path.clone(),
                    problem: format!(
                        "{e:#}; a tool component may import only WASI 0.2 interfaces and wasi:http"
                    ),
                })?;
        let pre = ToolboxPre::new(pre).map_err(|e| LoadError::WrongWorld {
            path: path.clone(),
            problem: format!(
                "its `{TOOLS_INTERFACE}` export does not match wit/tool.wit ({e:#}); rebuild it \
                 against this version of the WIT"
            ),
        })?;

        let describe_sandbox = Sandbox::empty(config.limits);
        let specs = call::describe(runtime, &pre, &describe_sandbox)
            .await
            .map_err(|source| LoadError::Describe {
                path: path.clone(),
                source: Box::new(source),
            })?;
        if specs.is_empty() {
            return Err(LoadError::WrongWorld {
                path,
                problem: "`describe` returned no tools".to_owned(),
            });
        }
        let mut tools = Vec::with_capacity(specs.len());
        for raw in specs {
            let name = raw.name.clone();
            let (spec, validator) = spec::check(raw).map_err(|problem| LoadError::InvalidSpec {
                path: path.clone(),
                tool: name.clone(),
                problem,
            })?;
            if tools
                .iter()
                .any(|(t, _): &(ToolSpec, _)| t.name == spec.name)
            {
                return Err(LoadError::InvalidSpec {
                    path: path.clone(),
                    tool: name,
                    problem: "is described twice".to_owned(),
                });
            }
            tools.push((spec, Arc::new(validator)));
        }

        Ok(Self {
            config,
            pre,
            sandbox,
            tools,
            imports,
            size,
            source,
            load_time: started.elapsed(),
        })
    }

    /// The name given to the component.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The component file.
    pub fn path(&self) -> &Path {
        &self.config.path
    }

    /// What the component's tools are granted.
    pub fn grants(&self) -> &Grants {
        &self.config.grants
    }

    /// The limits of every call.
    pub fn limits(&self) -> &Limits {
        &self.config.limits
    }

    /// The tools it offers.
    pub fn tools(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter().map(|(spec, _)| spec)
    }

    /// The interfaces it imports (WASI and wasi:http ones), by full name.
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// The size of the component file in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether it came from the compile cache or was compiled.
    pub fn compile_source(&self) -> CompileSource {
        self.source
    }

    /// How long loading took, from reading the file to having its tools.
    pub fn load_time(&self) -> Duration {
        self.load_time
    }
}

/// A readable error for files that are not components at all.
fn check_header(path: &Path, bytes: &[u8]) -> Result<(), LoadError> {
    let problem = match bytes.get(..8) {
        Some([0, b'a', b's', b'm', 0x0d, 0, 1, 0]) => return Ok(()),
        Some([0, b'a', b's', b'm', 1, 0, 0, 0]) => {
            "it is a core WebAssembly module, not a component; build it for `wasm32-wasip2`, or \
             wrap it with `wasm-tools component new` (and the WASI preview1 adapter)"
        }
        Some([0, b'a', b's', b'm', ..]) => "it is a WebAssembly binary of an unknown version",
        _ => "it is not a WebAssembly file",
    };
    Err(LoadError::NotAComponent {
        path: path.to_owned(),
        problem: problem.to_owned(),
    })
}

/// Checks that the component exports the tools interface, and returns what it imports.
fn check_exports(
    runtime: &Runtime,
    path: &Path,
    component: &Component,
) -> Result<Vec<String>, LoadError> {
    let engine = runtime.engine();
    let ty = component.component_type();
    let exports: Vec<String> = ty
        .exports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    if !exports.iter().any(|name| name == TOOLS_INTERFACE) {
        let interface = TOOLS_INTERFACE.split('@').next().unwrap_or(TOOLS_INTERFACE);
        let problem = match exports.iter().find(|name| name.starts_with(interface)) {
            Some(other) => format!(
                "it exports `{other}`, but this host speaks `{TOOLS_INTERFACE}`; rebuild it \
                 against this version of wit/tool.wit"
            ),
            None if exports.is_empty() => {
                format!("it exports nothing; it must export `{TOOLS_INTERFACE}`")
            }
            None => format!(
                "it does not export `{TOOLS_INTERFACE}` (it exports {}); build it for the \
                 `toolbox` world of wit/tool.wit",
                exports.join(", ")
            ),
        };
        return Err(LoadError::WrongWorld {
            path: path.to_owned(),
            problem,
        });
    }
    Ok(ty
        .imports(engine)
        .filter(|(_, item)| matches!(item.ty, ComponentItem::ComponentInstance(_)))
        .map(|(name, _)| name.to_owned())
        .collect())
}
