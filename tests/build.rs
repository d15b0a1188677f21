//! Builds the guest components the tests load, from source, so `cargo test` alone is enough:
//! the Rust example tools (`example-tools/`) and the test guests (`tests/guests/`). They are
//! built for wasm32-wasip2 in release mode into `<target>/guests`, the same directory
//! `just tools` uses, so neither builds them twice.
//!
//! Emits `components.rs` in `OUT_DIR`: one `&str` constant per component with its path, and
//! `BUILD_ERROR`: why the guests could not be built, if they could not (a missing toolchain,
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
        .args(["build", "--release", "--target", "wasm32-wasip2", "--quiet"])
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
