//! The real parts: Debian's `docker-registry` (distribution 2.8) on a free 127.0.0.1 port,
//! with or without htpasswd authentication; a cache and a Docker config of the test's own for
//! every `host` run; and `oras` (PyPI) as the second client.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use toolhost_tests::cli::{HostCommand, HostOutput};

/// A `docker-registry` child, killed and its storage removed when dropped.
pub struct Registry {
    child: Child,
    dir: TempDir,
    port: u16,
}

/// `user:password` of the registries started with authentication.
pub const USER: &str = "alice";
pub const PASSWORD: &str = "wonderland-7";

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

impl Registry {
    /// A registry anyone may pull from and push to.
    pub fn start() -> Self {
        Self::start_with(false)
    }

    /// A registry that wants `USER`:`PASSWORD` (htpasswd, bcrypt) for everything.
    pub fn start_with_auth() -> Self {
        Self::start_with(true)
    }

    fn start_with(auth: bool) -> Self {
        let binary = Path::new("/usr/bin/docker-registry");
        assert!(
            binary.exists(),
            "this test needs Debian's docker-registry: run scripts/setup-registry.sh \
             (apt-get install docker-registry apache2-utils)"
        );
        let dir = tempfile::tempdir().expect("a temp dir");
        let port = free_port();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
             http:\n  addr: 127.0.0.1:{port}\n",
            dir.path().join("storage").display()
        );
        if auth {
            let htpasswd = dir.path().join("htpasswd");
            let made = Command::new("htpasswd")
                .args(["-Bbc"])
                .arg(&htpasswd)
                .args([USER, PASSWORD])
                .stderr(Stdio::null())
                .status()
                .expect("htpasswd runs (apt-get install apache2-utils)");
            assert!(made.success(), "htpasswd -B makes a bcrypt entry");
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: toolhost-tests\n    path: {}\n",
                htpasswd.display()
            ));
        }
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).expect("the config is written");
        let child = Command::new(binary)
            .arg("serve")
            .arg(&config_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry starts");
        let registry = Self { child, dir, port };
        registry.wait_until_up();
        registry
    }

    fn wait_until_up(&self) {
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "docker-registry did not listen on 127.0.0.1:{} within 20 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `oci://127.0.0.1:PORT/PATH`.
    pub fn reference(&self, path: &str) -> String {
        format!("oci://{}/{path}", self.address())
    }

    /// The file the registry keeps blob `digest` in (to alter it behind the registry's back).
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.dir
            .path()
            .join("storage/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// Stops the registry (its port refuses connections afterwards).
    pub fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one test's `host` runs share: a cache (`TOOLHOST_CACHE`, where pulled components are
/// kept) and a Docker config directory (`DOCKER_CONFIG`) of their own.
pub struct Workspace {
    pub dir: TempDir,
}

impl Workspace {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temp dir");
        std::fs::create_dir_all(dir.path().join("docker")).expect("docker config dir");
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The store of pulled components.
    pub fn store(&self) -> PathBuf {
        self.path().join("cache/oci")
    }

    /// The blobs in the store (empty when nothing was stored).
    pub fn stored_blobs(&self) -> Vec<String> {
        let dir = self.store().join("blobs/sha256");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(|entry| entry.ok())
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .filter(|name| !name.starts_with(".tmp"))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// `host SUBCOMMAND` with this workspace's cache and Docker config.
    pub fn host(&self, subcommand: &str) -> HostCommand {
        HostCommand::new(subcommand)
            .env("TOOLHOST_CACHE", self.path().join("cache"))
            .env("DOCKER_CONFIG", self.path().join("docker"))
            .env_remove("TOOLHOST_REGISTRY")
            .env_remove("TOOLHOST_REGISTRY_USERNAME")
            .env_remove("TOOLHOST_REGISTRY_PASSWORD")
    }

    /// `host push COMPONENT REFERENCE --json`, which must succeed; returns its JSON.
    /// `host call TARGET TOOL ARGUMENTS` (TARGET: a reference, a component or a manifest).
    pub fn call(
        &self,
        target: impl AsRef<std::ffi::OsStr>,
        tool: &str,
        arguments: &str,
    ) -> HostOutput {
        self.host("call")
            .arg(target)
            .args([tool, arguments])
            .run_blocking()
    }

    pub fn push(&self, component: &str, reference: &str) -> serde_json::Value {
        let out = self
            .host("push")
            .args([component, reference, "--json"])
            .run_blocking();
        out.assert_success();
        out.json()
    }

    /// `host pull REFERENCE --json ARGS`.
    pub fn pull(&self, reference: &str, args: &[&str]) -> HostOutput {
        self.host("pull")
            .args([reference, "--json"])
            .args(args)
            .run_blocking()
    }

    /// Writes a `toolhost.toml` here with `text`, and returns its path.
    pub fn manifest(&self, text: &str) -> PathBuf {
        let path = self.path().join("toolhost.toml");
        std::fs::write(&path, text).expect("the manifest is written");
        path
    }
}

/// Fails the test unless `out` failed (exit 2) with every one of `needles` on stderr.
#[track_caller]
pub fn assert_refused(out: &HostOutput, needles: &[&str]) {
    assert_eq!(
        out.code(),
        Some(2),
        "expected a refusal; stdout:\n{}\nstderr:\n{}",
        out.stdout,
        out.stderr
    );
    for needle in needles {
        assert!(
            out.stderr.contains(needle),
            "stderr lacks `{needle}`:\n{}",
            out.stderr
        );
    }
}

/// The Python with `oras` installed (scripts/setup-registry.sh).
pub fn oras_python() -> PathBuf {
    // Where scripts/setup-registry.sh puts it: the same fallbacks.
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let cache = var("TOOLHOST_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|dir| dir.join("toolhost")))
        .or_else(|| var("HOME").map(|dir| dir.join(".cache/toolhost")))
        .expect("TOOLHOST_CACHE or HOME is set");
    let python = cache.join("oci-peers/py/bin/python");
    assert!(
        python.exists(),
        "{} does not exist: run scripts/setup-registry.sh (installs oras from PyPI)",
        python.display()
    );
    python
}

/// Runs `tests/oci/oras_client.py ARGS` with the oras venv; returns stdout, fails the test
/// with stderr when it fails.
pub fn oras(args: &[&str]) -> String {
    let script = toolhost_tests::repo_root().join("tests/oci/oras_client.py");
    let out = Command::new(oras_python())
        .arg(script)
        .args(args)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "oras_client.py {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `GET http://ADDRESS/PATH` with `Accept`, HTTP/1.0 over a plain socket: the body, when the
/// status is 200.
pub fn http_get(address: &str, path: &str, accept: &str) -> Vec<u8> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(address).expect("the registry listens");
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {address}\r\nAccept: {accept}\r\n\r\n"
    )
    .expect("the request is sent");
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .expect("the answer is read");
    let end = response
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&response[..end]);
    assert!(
        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
        "GET {path}: {head}"
    );
    response[end + 4..].to_vec()
}
