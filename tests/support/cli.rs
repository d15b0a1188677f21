//! The `host` binary run as a user runs it: [`HostCommand`] builds the command line (a
//! manifest, the scripted model, arguments, what is typed on stdin) with the tests'
//! environment set once, and [`HostOutput`] is what the user saw: stdout, stderr and the exit
//! code.
//!
//! ```no_run
//! # async fn example(model: &toolhost_tests::model::ScriptedModel) {
//! use toolhost_tests::cli::{HostCommand, ManifestFile};
//!
//! let manifest = ManifestFile::calculator("");
//! let out = HostCommand::new("run")
//!     .manifest(&manifest)
//!     .model(model)
//!     .arg("What is 2+40?")
//!     .run()
//!     .await;
//! out.assert_success();
//! assert_eq!(out.stdout, "It is 42.\n");
//! # }
//! ```

use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use crate::components::CALCULATOR;
use crate::model::{Format, ScriptedModel};
use crate::{host_binary, target_dir};

/// The `host` binary with the tests' environment: the tests' compile cache, and nothing the
/// test process may have inherited that changes what `host` prints or which manifest it reads
/// (`RUST_LOG`, `TOOLHOST_MANIFEST`).
pub fn host_command() -> Command {
    let mut command = Command::new(host_binary());
    command
        .env(
            "TOOLHOST_COMPONENT_CACHE",
            target_dir().join("test-compile-cache"),
        )
        .env_remove("RUST_LOG")
        .env_remove("TOOLHOST_MANIFEST");
    command
}

/// A `host` command line, built in the order a user types it: the subcommand, `-m MANIFEST`,
/// the model, then the other arguments.
pub struct HostCommand {
    command: Command,
    stdin: Option<Vec<u8>>,
}

impl HostCommand {
    /// `host SUBCOMMAND` (`run`, `chat`, `call`, `tools`, ...), with [`host_command`]'s
    /// environment.
    pub fn new(subcommand: &str) -> Self {
        let mut command = host_command();
        command.arg(subcommand);
        Self {
            command,
            stdin: None,
        }
    }

    /// `-m PATH`.
    pub fn manifest(mut self, manifest: &(impl AsRef<Path> + ?Sized)) -> Self {
        self.command.arg("-m").arg(manifest.as_ref());
        self
    }

    /// `--model PROVIDER:scripted --base-url URL` for `model`, in its wire format (and an API
    /// key for Anthropic, which requires one).
    pub fn model(mut self, model: &ScriptedModel) -> Self {
        let provider = match model.format() {
            Format::OpenAi => "openai:scripted",
            Format::Anthropic => {
                self.command.env("ANTHROPIC_API_KEY", "test-key");
                "anthropic:scripted"
            }
        };
        self.command
            .args(["--model", provider, "--base-url", &model.base_url()]);
        self
    }

    /// One more argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.command.arg(arg);
        self
    }

    /// More arguments.
    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.command.args(args);
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.command.env(key, value);
        self
    }

    /// Removes an environment variable.
    pub fn env_remove(mut self, key: &str) -> Self {
        self.command.env_remove(key);
        self
    }

    /// `TOOLHOST_CA_BUNDLE` naming `bundle`, or unset without one (never the caller's own).
    pub fn ca_bundle(self, bundle: Option<&Path>) -> Self {
        let command = self.env_remove("TOOLHOST_CA_BUNDLE");
        match bundle {
            Some(bundle) => command.env("TOOLHOST_CA_BUNDLE", bundle),
            None => command,
        }
    }

    /// What the user types: written to stdin, which is then closed (stdin is empty otherwise).
    pub fn stdin(mut self, typed: &str) -> Self {
        self.stdin = Some(typed.as_bytes().to_vec());
        self
    }

    /// The command, for a test that runs it another way (on a terminal, killed mid-run).
    pub fn into_command(self) -> Command {
        self.command
    }

    /// Runs the command to its end, blocking this thread.
    pub fn run_blocking(mut self) -> HostOutput {
        let stdin = if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        };
        let mut child = self
            .command
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", host_binary().display()));
        if let Some(typed) = self.stdin {
            let mut stdin = child.stdin.take().expect("stdin is piped");
            stdin.write_all(&typed).expect("host reads its stdin");
        }
        HostOutput::from(child.wait_with_output().expect("host can be waited for"))
    }

    /// Runs the command to its end on a blocking thread (so a scripted model served by this
    /// test's runtime keeps answering).
    pub async fn run(self) -> HostOutput {
        tokio::task::spawn_blocking(move || self.run_blocking())
            .await
            .expect("the command's thread does not panic")
    }
}

/// What a user saw of one `host` run.
pub struct HostOutput {
    /// The exit status.
    pub status: std::process::ExitStatus,
    /// Stdout, as text.
    pub stdout: String,
    /// Stderr, as text.
    pub stderr: String,
}

impl From<Output> for HostOutput {
    fn from(output: Output) -> Self {
        Self {
            status: output.status,
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl HostOutput {
    /// The exit code (`None` when a signal ended the process).
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Whether the process exited with 0.
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// Fails the test, showing stderr, unless the process exited with 0.
    #[track_caller]
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.success(),
            "host exited with {}; stderr:\n{}",
            self.status,
            self.stderr
        );
        self
    }

    /// Stdout parsed as JSON; fails the test, showing both streams, when it is not.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// A manifest written to `toolhost.toml` in a temporary directory of its own (removed when
/// this is dropped).
pub struct ManifestFile {
    dir: TempDir,
    path: PathBuf,
}

impl ManifestFile {
    /// A manifest of `text`.
    pub fn new(text: &str) -> Self {
        Self::in_dir(|_| text.to_owned())
    }

    /// A manifest of the text `text` makes of the directory it is in (for paths there: a log,
    /// an audit file).
    pub fn in_dir(text: impl FnOnce(&Path) -> String) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, text(dir.path())).expect("the manifest is written");
        Self { dir, path }
    }

    /// A manifest with the calculator component, and `extra` after it.
    pub fn calculator(extra: &str) -> Self {
        Self::new(&format!(
            "[components.calculator]\npath = {CALCULATOR:?}\n\n{extra}"
        ))
    }

    /// The manifest's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The manifest's path, as text (for a command line).
    pub fn arg(&self) -> &str {
        self.path.to_str().expect("temporary paths are UTF-8")
    }

    /// The directory the manifest is in (where its relative paths point).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl AsRef<Path> for ManifestFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// The `[model]` table that points a manifest at `model` (OpenAI format: no key needed).
pub fn model_table(model: &ScriptedModel) -> String {
    let provider = match model.format() {
        Format::OpenAi => "openai",
        Format::Anthropic => "anthropic",
    };
    format!(
        "[model]\nprovider = \"{provider}\"\nbase_url = {:?}\n",
        model.base_url()
    )
}
