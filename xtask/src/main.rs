//! Build helpers for tool components written in C and Go, in place of the `wit-bindgen` and
//! `wasm-tools` command-line tools (whose `cargo install` takes minutes; their crates as
//! libraries are cheap).
//!
//! ```text
//! cargo run -q -p xtask -- bindgen c  --wit wit --world toolbox --out build/gen
//! cargo run -q -p xtask -- bindgen go --wit wit --world toolbox --out build/go
//! cargo run -q -p xtask -- embed --wit wit --world toolbox core.wasm -o core-wit.wasm
//! cargo run -q -p xtask -- new core-wit.wasm -o tool.wasm
//! ```

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context as _, bail};
use clap::{Parser, Subcommand, ValueEnum};
use wasi_preview1_component_adapter_provider::{
    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
};
use wit_bindgen_core::Files;
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::{Resolve, WorldId};

/// Where generated Go bindings expect `go.bytecodealliance.org/pkg`, relative to their go.mod.
const GO_PKG_DIR: &str = "go-pkg";

/// Build helpers for tool components written in C and Go.
#[derive(Debug, Parser)]
#[command(name = "xtask", max_term_width = 100)]
struct Args {
    #[command(subcommand)]
    command: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Generate guest bindings for a WIT world (like `wit-bindgen c|go`)
    ///
    /// For Go, the output is a whole Go module (`module wit_component`) whose go.mod is
    /// rewritten to use a local copy of `go.bytecodealliance.org/pkg`, the copy shipped inside
    /// the wit-bindgen-go crate, so `GOPROXY=off` builds work.
    Bindgen {
        /// The language to generate bindings for
        language: Language,
        #[command(flatten)]
        world: WorldArgs,
        /// The directory to write the bindings into (created if missing)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Add a world's component-type metadata to a core module (like `wasm-tools component
    /// embed`)
    Embed {
        #[command(flatten)]
        world: WorldArgs,
        /// The core WebAssembly module
        module: PathBuf,
        /// Where to write the module with the metadata
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Turn a core module with component-type metadata into a component, adapting WASI
    /// preview1 imports with the reactor adapter (like `wasm-tools component new --adapt`)
    New {
        /// The core WebAssembly module, with embedded component-type metadata
        module: PathBuf,
        /// Where to write the component
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Language {
    C,
    Go,
}

/// Which WIT world to use.
#[derive(Debug, clap::Args)]
struct WorldArgs {
    /// A WIT file or a directory of WIT files (with an optional `deps/`)
    #[arg(long, value_name = "PATH", default_value = "wit")]
    wit: PathBuf,
    /// The world in that package
    #[arg(long, value_name = "NAME", default_value = "toolbox")]
    world: String,
}

impl WorldArgs {
    fn load(&self) -> anyhow::Result<(Resolve, WorldId)> {
        let mut resolve = Resolve::default();
        let (package, _) = resolve
            .push_path(&self.wit)
            .with_context(|| format!("cannot read the WIT at `{}`", self.wit.display()))?;
        let world = resolve
            .select_world(&[package], Some(&self.world))
            .with_context(|| format!("no world `{}` in `{}`", self.world, self.wit.display()))?;
        Ok((resolve, world))
    }
}

fn main() -> ExitCode {
    match run(Args::parse().command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            for cause in error.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

fn run(task: Task) -> anyhow::Result<()> {
    match task {
        Task::Bindgen {
            language,
            world,
            out,
        } => bindgen(language, &world, &out),
        Task::Embed {
            world,
            module,
            output,
        } => {
            let (resolve, world) = world.load()?;
            let mut bytes = read(&module)?;
            wit_component::embed_component_metadata(
                &mut bytes,
                &resolve,
                world,
                StringEncoding::UTF8,
                false,
            )
            .with_context(|| format!("cannot embed the WIT world into `{}`", module.display()))?;
            write(&output, &bytes)
        }
        Task::New { module, output } => {
            let bytes = read(&module)?;
            let component = ComponentEncoder::default()
                .validate(true)
                .module(&bytes)
                .with_context(|| {
                    format!(
                        "`{}` is not a core module with component-type metadata (run `embed` \
                         first, or link the wit-bindgen C object file)",
                        module.display()
                    )
                })?
                .adapter(
                    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
                    WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
                )
                .context("cannot use the WASI preview1 reactor adapter")?
                .encode()
                .with_context(|| format!("cannot make a component of `{}`", module.display()))?;
            write(&output, &component)
        }
    }
}

fn bindgen(language: Language, world: &WorldArgs, out: &Path) -> anyhow::Result<()> {
    let (mut resolve, world) = world.load()?;
    let mut generator = match language {
        Language::C => wit_bindgen_c::Opts::default().build(),
        Language::Go => wit_bindgen_go::Opts::default().build(),
    };
    let mut files = Files::default();
    generator
        .generate(&mut resolve, world, &mut files)
        .context("cannot generate the bindings")?;
    for (name, contents) in files.iter() {
        let contents = if matches!(language, Language::Go) && name == "go.mod" {
            use_local_go_pkg(contents)?
        } else {
            contents.to_vec()
        };
        write(&out.join(name), &contents)?;
    }
    if matches!(language, Language::Go) {
        copy_go_pkg(&out.join(GO_PKG_DIR))?;
    }
    Ok(())
}

/// Adds a `replace` that points `go.bytecodealliance.org/pkg` at the local copy.
fn use_local_go_pkg(go_mod: &[u8]) -> anyhow::Result<Vec<u8>> {
    let text = std::str::from_utf8(go_mod).context("the generated go.mod is not UTF-8")?;
    if !text.contains("go.bytecodealliance.org/pkg") {
        bail!("the generated go.mod does not require go.bytecodealliance.org/pkg:\n{text}");
    }
    Ok(format!("{text}\nreplace go.bytecodealliance.org/pkg => ./{GO_PKG_DIR}\n").into_bytes())
}

/// Copies the Go package `go.bytecodealliance.org/pkg` (its go.mod and `wit/`) out of the
/// wit-bindgen-go crate's source, which cargo has already downloaded to build this tool.
fn copy_go_pkg(to: &Path) -> anyhow::Result<()> {
    let from = crate_dir("wit-bindgen-go")?.join("src/pkg");
    if to.exists() {
        fs::remove_dir_all(to).with_context(|| format!("cannot remove `{}`", to.display()))?;
    }
    write(&to.join("go.mod"), &read(&from.join("go.mod"))?)?;
    copy_dir(&from.join("wit"), &to.join("wit"))
}

/// The source directory of a dependency of this crate, as `cargo metadata` reports it.
fn crate_dir(name: &str) -> anyhow::Result<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", env!("XTASK_TARGET"), "--manifest-path"])
        .arg(&manifest)
        .output()
        .context("cannot run `cargo metadata`")?;
    if !output.status.success() {
        bail!(
            "`cargo metadata` for `{}` failed:\n{}",
            manifest.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("`cargo metadata` printed no JSON")?;
    let package = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|package| package["name"] == name)
        .with_context(|| format!("`cargo metadata` lists no package `{name}`"))?;
    let manifest_path = package["manifest_path"]
        .as_str()
        .with_context(|| format!("`cargo metadata` gives no manifest path for `{name}`"))?;
    Path::new(manifest_path)
        .parent()
        .map(Path::to_path_buf)
        .with_context(|| format!("`{manifest_path}` has no parent directory"))
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    let entries =
        fs::read_dir(from).with_context(|| format!("cannot list `{}`", from.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list `{}`", from.display()))?;
        let path = entry.path();
        let target = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &target)?;
        } else {
            write(&target, &read(&path)?)?;
        }
    }
    Ok(())
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    fs::read(path).with_context(|| format!("cannot read `{}`", path.display()))
}

fn write(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .with_context(|| format!("cannot create `{}`", parent.display()))?;
    }
    fs::write(path, contents).with_context(|| format!("cannot write `{}`", path.display()))
}
