//! Builds the guest components the tests load, from source, so `cargo test` alone is enough:
//! the Rust example tools (`example-tools/`) and the test guests (`tests/guests/`). The Rust ones
//! are built for wasm32-wasip2 in release mode into `<target>/guests`, the same directory
//! `just tools` uses, so neither builds them twice; a test guest in another language (a
//! directory with a `build.sh`, such as the Python `mcp-conformance-py`) by its script.
//!
//! Emits `components.rs` in `OUT_DIR`: one `&str` constant per component with its path,
//! `SCRIPT_BUILD_ERRORS`: the guests whose script failed, with why, and
//! `BUILD_ERROR`: why the Rust guests could not be built, if they could not (a missing toolchain,
//! say). The build itself never fails for that: the tests that need a guest fail instead,
//! with that message and the command that fixes it (as wasmtime's test-programs do).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let tests_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = tests_dir
        .parent()
        .expect("tests/ is inside the repository")
        .to_owned();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    let target_dir = cargo_target_dir(&out_dir, &root).join("guests");

    let workspaces = [root.join("example-tools"), tests_dir.join("guests")];
    for path in [
        root.join("wit"),
        root.join("guest-sdk/src"),
        root.join("guest-sdk/Cargo.toml"),
    ] {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let mut constants = String::new();
    let mut errors: Vec<String> = Vec::new();
    for workspace in &workspaces {
        for file in ["Cargo.toml", "Cargo.lock"] {
            println!("cargo:rerun-if-changed={}", workspace.join(file).display());
        }
        let crates = rust_crates(workspace);
        for krate in &crates {
            println!(
                "cargo:rerun-if-changed={}",
                workspace.join(krate).join("src").display()
            );
            println!(
                "cargo:rerun-if-changed={}",
                workspace.join(krate).join("Cargo.toml").display()
            );
        }
        if let Err(error) = build(workspace, &target_dir) {
            errors.push(error);
        }
        for krate in &crates {
            let file = target_dir
                .join("wasm32-wasip2/release")
                .join(format!("{}.wasm", krate.replace('-', "_")));
            let file = if file.exists() {
                file
            } else {
                // Binaries keep their dashes.
                target_dir
                    .join("wasm32-wasip2/release")
                    .join(format!("{krate}.wasm"))
            };
            if errors.is_empty() && !file.exists() {
                errors.push(format!(
                    "the build of {krate} produced no {}",
                    file.display()
                ));
            }
            let name = krate.replace('-', "_").to_uppercase();
            constants.push_str(&format!(
                "/// The `{krate}` component, built from `{}`.\npub const {name}: &str = {:?};\n",
                workspace.join(krate).display(),
                file.display().to_string()
            ));
        }
    }
    let guests = tests_dir.join("guests");
    let mut scripted = script_guests(&guests, &root.join("wit"), &target_dir, &mut constants);
    // The code runners of code mode (`code-runners/`), built the same way.
    scripted.extend(script_guests(
        &root.join("code-runners"),
        &root.join("wit"),
        &target_dir,
        &mut constants,
    ));
    constants.push_str(&format!(
        "/// The guests built by a script that could not be, with why: path, error.\n\
         pub const SCRIPT_BUILD_ERRORS: &[(&str, &str)] = &{scripted:?};\n"
    ));
    let error = if errors.is_empty() {
        "None".to_owned()
    } else {
        for error in &errors {
            println!("cargo:warning={}", error.lines().next().unwrap_or_default());
        }
        format!("Some({:?})", errors.join("\n"))
    };
    constants.push_str(&format!(
        "/// Why the guests could not be built, when they could not.\npub const BUILD_ERROR: Option<&str> = {error};\n"
    ));
    std::fs::write(out_dir.join("components.rs"), constants).expect("OUT_DIR is writable");
}

/// Builds the guests written in other languages, the directories of `guests` with a
/// `build.sh` (`build.sh OUT.wasm`, as `scripts/build-tools.sh` runs the example tools'), into
/// `<target_dir>/<directory>.wasm` (unless that is newer than the directory, `wit` and the
/// toolchain), adding a constant for each to `constants`. Returns the ones that could not be
/// built, with why: their tests fail with that, the others run.
fn script_guests(
    guests: &Path,
    wit: &Path,
    target_dir: &Path,
    constants: &mut String,
) -> Vec<(String, String)> {
    for var in ["TOOLHOST_CACHE", "XDG_CACHE_HOME", "HOME"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // Where the scripts find their toolchains (scripts/setup-toolchains.sh). While one is
    // missing, cargo runs this again at every build, so installing it is enough.
    let componentize = toolchains_dir().map(|dir| dir.join("venv/bin/componentize-py"));
    if let Some(componentize) = &componentize {
        println!("cargo:rerun-if-changed={}", componentize.display());
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(guests)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", guests.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|dir| dir.join("build.sh").exists())
        .collect();
    dirs.sort();
    let mut failed = Vec::new();
    for dir in dirs {
        println!("cargo:rerun-if-changed={}", dir.display());
        let name = dir
            .file_name()
            .expect("a directory entry")
            .to_string_lossy()
            .into_owned();
        let file = target_dir.join(format!("{name}.wasm"));
        // The check build (clippy) and the test build each run this script: the second finds
        // the component newer than what it is made of, and keeps it (and its compiled copy).
        let inputs = [
            Some(dir.clone()),
            Some(wit.to_owned()),
            componentize.clone(),
        ];
        let built = newest(&file);
        let fresh = built.is_some() && inputs.iter().flatten().all(|input| newest(input) < built);
        let output = (!fresh).then(|| Command::new(dir.join("build.sh")).arg(&file).output());
        let error = match output {
            None => None,
            Some(Ok(output)) if output.status.success() => None,
            Some(Ok(output)) => Some(format!(
                "{}/build.sh failed; fix the error below, or run `scripts/setup-toolchains.sh`:\n{}",
                dir.display(),
                String::from_utf8_lossy(&output.stderr)
            )),
            Some(Err(e)) => Some(format!("cannot run {}/build.sh: {e}", dir.display())),
        };
        if let Some(error) = error {
            println!("cargo:warning={}", error.lines().next().unwrap_or_default());
            failed.push((file.display().to_string(), error));
        }
        constants.push_str(&format!(
            "/// The `{name}` component, built by `{}/build.sh`.\npub const {}: &str = {:?};\n",
            dir.display(),
            name.replace('-', "_").to_uppercase(),
            file.display().to_string()
        ));
    }
    failed
}

/// When `path` last changed: a file's time, or the newest of a directory's files (its
/// `__pycache__` aside); `None` when it does not exist.
fn newest(path: &Path) -> Option<std::time::SystemTime> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(path)
        .ok()?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name() != "__pycache__")
        .filter_map(|entry| newest(&entry.path()))
        .max()
}

/// `$TOOLHOST_CACHE/toolchains`, as the scripts find it (`~/.cache/toolhost` by default).
fn toolchains_dir() -> Option<PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let cache = var("TOOLHOST_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|dir| dir.join("toolhost")))
        .or_else(|| var("HOME").map(|home| home.join(".cache/toolhost")))?;
    Some(cache.join("toolchains"))
}

/// The member crates of a guest workspace: its subdirectories with a Cargo.toml.
fn rust_crates(workspace: &Path) -> Vec<String> {
    let mut crates: Vec<String> = std::fs::read_dir(workspace)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", workspace.display()))
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("Cargo.toml").exists())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    crates.sort();
    crates
}

/// Builds the guests of `workspace`, or says why it could not and what to do.
fn build(workspace: &Path, target_dir: &Path) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace)
        .args([
            "build",
            "--locked",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--quiet",
        ])
        .env("CARGO_TARGET_DIR", target_dir);
    // The outer build's flags are for the host, not for wasm guests.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        command.env_remove(var);
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot run cargo to build {}: {e}", workspace.display()))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let hint = if stderr.contains("wasm32-wasip2") && stderr.contains("target may not be installed")
    {
        "run `rustup target add wasm32-wasip2` (or `just setup`)"
    } else {
        "fix the error above, or run `just setup`"
    };
    Err(format!(
        "building the test guests in {} failed; {hint}:\n{stderr}",
        workspace.display()
    ))
}

/// The target directory of the outer build: the ancestor of `OUT_DIR` that cargo marked with
/// a CACHEDIR.TAG, else `<repo>/target`.
fn cargo_target_dir(out_dir: &Path, root: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").exists())
        .map(Path::to_owned)
        .unwrap_or_else(|| root.join("target"))
}
