//! Why a component, or a manifest's set of components, could not be loaded.

use std::path::PathBuf;

use super::call::CallError;

/// Why a component (or a manifest's set of components) could not be loaded.
///
/// Every variant names the file it is about; the message says what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The component file could not be read.
    #[error("cannot read component {}", path.display())]
    Read {
        /// The component file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },

    /// The file is not a WebAssembly component.
    #[error("{} is not a tool component: {problem}", path.display())]
    NotAComponent {
        /// The file.
        path: PathBuf,
        /// What it is instead, and how to make a component of it.
        problem: String,
    },

    /// Compiling the component failed.
    #[error("cannot compile {}", path.display())]
    Compile {
        /// The component file.
        path: PathBuf,
        /// Wasmtime's reason.
        #[source]
        source: anyhow::Error,
    },

    /// The compile cache cannot be trusted: compiled code is native code, so it is loaded only
    /// from a directory and files that this user owns and nobody else can write.
    #[error("refusing to load compiled code from {}: {problem}", path.display())]
    UnsafeCache {
        /// The directory or file.
        path: PathBuf,
        /// What is wrong and how to fix it.
        problem: String,
    },

    /// The component does not target the `toolhost:tool/toolbox` world.
    #[error("{} does not target the toolhost:tool world: {problem}", path.display())]
    WrongWorld {
        /// The component file.
        path: PathBuf,
        /// What is missing or different.
        problem: String,
    },

    /// The component's `describe` export failed.
    #[error("{}: `describe` failed", path.display())]
    Describe {
        /// The component file.
        path: PathBuf,
        /// What went wrong while running it.
        #[source]
        source: Box<CallError>,
    },

    /// A tool's spec is not usable.
    #[error("{origin}: tool `{tool}` {problem}")]
    InvalidSpec {
        /// Where the tool comes from (a component file, a server).
        origin: String,
        /// The tool's name as its source gave it.
        tool: String,
        /// What is wrong with it.
        problem: String,
    },

    /// Two sources offer a tool with the same name.
    #[error(
        "tool `{tool}` is offered by both {first} and {second}; a model can only call one of \
         them: load just one, or give one of them a `prefix`"
    )]
    DuplicateTool {
        /// The tool name.
        tool: String,
        /// The source loaded first.
        first: String,
        /// The source that offers it again.
        second: String,
    },

    /// A source's `tools` or `exclude` list names a tool it does not offer: a typo that
    /// would offer more than written (an exclusion that excludes nothing) or less.
    #[error(
        "{origin} has no tool `{tool}` (named in its `{key}` list){}; it offers: {}",
        closest.as_ref().map_or_else(String::new, |name| format!("; did you mean `{name}`?")),
        offered.join(", ")
    )]
    NoSuchTool {
        /// The source.
        origin: String,
        /// The list that names it: `tools` or `exclude`.
        key: &'static str,
        /// The name that was listed.
        tool: String,
        /// The offered name closest to it, when one is close.
        closest: Option<String>,
        /// What it does offer.
        offered: Vec<String>,
    },

    /// A source's `resources`, `exclude_resources`, `prompts` or `exclude_prompts` list names
    /// something it does not offer (a typo, as with [`LoadError::NoSuchTool`]).
    #[error(
        "{origin} offers no {what} `{name}` (named in its `{key}` list); it offers: {}",
        if offered.is_empty() { "none".to_owned() } else { offered.join(", ") }
    )]
    NoSuchOffer {
        /// The source.
        origin: String,
        /// The list that names it.
        key: &'static str,
        /// `resource` or `prompt`.
        what: &'static str,
        /// The name that was listed.
        name: String,
        /// What it does offer of that kind.
        offered: Vec<String>,
    },

    /// A grant cannot be applied (a granted directory does not exist, ...).
    #[error("component `{component}`: {problem}")]
    Grant {
        /// The component's name in the manifest.
        component: String,
        /// What is wrong and how to fix it.
        problem: String,
    },

    /// A component named by an `oci://` reference could not be pulled, pinned or verified
    /// (nothing of it was stored or run).
    #[error("component `{component}` cannot be used")]
    Pull {
        /// The component's name (the manifest key, or the repository's last part).
        component: String,
        /// What went wrong, naming the reference.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// What the manifest (or the application) asks for needs a cargo feature this build of
    /// the library leaves out: an `oci://` component needs `oci`, an MCP server `mcp-client`.
    #[error(
        "{what} needs toolhost's `{feature}` feature, which this build leaves out; build \
         toolhost with it (`features = [\"{feature}\"]`, or the default features)"
    )]
    FeatureOff {
        /// What needs it, as the manifest names it.
        what: String,
        /// The cargo feature.
        feature: &'static str,
    },

    /// A tool source other than a component could not be started or listed.
    #[error("{origin} could not be loaded")]
    Source {
        /// The source.
        origin: String,
        /// Why.
        #[source]
        source: anyhow::Error,
    },
}
