//! Paths, manifests and grants that asked for more than they should get (issue 26, findings
//! 10-12): files that are not files, manifests too large to load, tool lists naming no
//! tool, empty directory paths, and HTTP grants reaching internal addresses by name or by
//! wildcard, each refused at once through the real `host` binary. Names point at 127.0.0.1
//! through a hosts file the test writes (`TOOLHOST_HOSTS_FILE`): nothing leaves the machine.

use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use toolhost_tests::components::{CALCULATOR, MISBEHAVE};
use toolhost_tests::server::{Reply, TestServer};

use super::faults_more::{bounded, ended_without_panic, manifest};
use toolhost_tests::cli::host_command as host;

// Finding 10: paths that are not files.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_that_are_not_files_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("tools.toml");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fifo_wasm = dir.path().join("tool.wasm");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo_wasm)
            .status()
            .unwrap()
            .success()
    );
    let zero_manifest = dir.path().join("zero.toml");
    std::os::unix::fs::symlink("/dev/zero", &zero_manifest).unwrap();
    let fifo = fifo.to_str().unwrap();
    let fifo_wasm = fifo_wasm.to_str().unwrap();
    let zero_manifest = zero_manifest.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec!["tools", "/dev/zero"],
            "/dev/zero",
            "a character device",
        ),
        (
            vec!["inspect", "/dev/urandom"],
            "/dev/urandom",
            "a character device",
        ),
        (
            vec!["call", "/dev/zero", "add", "{}"],
            "/dev/zero",
            "a character device",
        ),
        (vec!["inspect", fifo_wasm], fifo_wasm, "a FIFO (named pipe)"),
        (vec!["tools", fifo], fifo, "a FIFO (named pipe)"),
        (
            vec!["tools", zero_manifest],
            zero_manifest,
            "a character device",
        ),
        (vec!["call", fifo, "add", "{}"], fifo, "a FIFO (named pipe)"),
    ];
    for (args, path, kind) in cases {
        let mut command = host();
        command.args(&args);
        let (output, took) = bounded(command).await;
        let what = args.join(" ");
        let (code, stderr) = ended_without_panic(output, &what);
        assert_ne!(code, 0, "{what}");
        assert!(stderr.contains(path), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!("it is {kind}, and a")),
            "{what}: {stderr}"
        );
        assert!(took < Duration::from_secs(10), "{what}: took {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_manifest_is_refused_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let many = dir.path().join("many.toml");
    let mut text = String::new();
    for i in 0..2000 {
        text.push_str(&format!(
            "[components.c{i}]\npath = {CALCULATOR:?}\nprefix = \"c{i}_\"\n"
        ));
    }
    std::fs::write(&many, text).unwrap();
    let large = dir.path().join("large.toml");
    let mut file = std::fs::File::create(&large).unwrap();
    writeln!(file, "[components.calculator]\npath = {CALCULATOR:?}").unwrap();
    writeln!(file, "[model]\nsystem = \"{}\"", "x".repeat(10 << 20)).unwrap();
    drop(file);
    for (path, expected) in [
        (
            &many,
            "names 2000 components and MCP servers; at most 256 are loaded",
        ),
        (
            &large,
            "it is larger than 1 MiB, the most read for a manifest",
        ),
    ] {
        let mut command = host();
        command.arg("tools").arg(path);
        let (output, took) = bounded(command).await;
        let what = path.display().to_string();
        let (code, stderr) = ended_without_panic(output, &what);
        assert_ne!(code, 0, "{what}");
        assert!(stderr.contains(expected), "{what}: {stderr}");
        assert!(took < Duration::from_secs(5), "{what}: took {took:?}");
    }
}

// Finding 11: typos that grant more than written.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_naming_no_tool_is_an_error_naming_the_key() {
    let cases = [
        (
            "exclude = [\"squre_root\"]",
            "exclude",
            "squre_root",
            Some("square_root"),
        ),
        (
            "exclude = [\"Square_root\"]",
            "exclude",
            "Square_root",
            Some("square_root"),
        ),
        (
            "exclude = [\"square_root \"]",
            "exclude",
            "square_root ",
            Some("square_root"),
        ),
        (
            "exclude = [\"isolation_chek\"]",
            "exclude",
            "isolation_chek",
            None,
        ),
        ("tools = [\"ad\", \"multiply\"]", "tools", "ad", Some("add")),
    ];
    for (line, key, name, closest) in cases {
        let (_dir, manifest) = manifest(line);
        let mut command = host();
        command.args(["tools", &manifest]);
        let (output, _) = bounded(command).await;
        let (code, stderr) = ended_without_panic(output, line);
        assert_ne!(code, 0, "{line}: the tool list was accepted:\n{stderr}");
        let expected = format!(
            "component `calculator` ({CALCULATOR}) has no tool `{name}` (named in its `{key}` list)"
        );
        assert!(stderr.contains(&expected), "{line}: {stderr}");
        match closest {
            Some(closest) => assert!(
                stderr.contains(&format!("did you mean `{closest}`?")),
                "{line}: {stderr}"
            ),
            None => assert!(!stderr.contains("did you mean"), "{line}: {stderr}"),
        }
        assert!(
            stderr.contains("it offers: add, multiply, square_root"),
            "{stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_grant_with_an_empty_host_path_is_an_error() {
    let (_dir, manifest) = manifest("grants.dirs = [{ host = \"\", guest = \"/data\" }]\n");
    let mut command = host();
    command.args(["tools", &manifest]);
    let (output, _) = bounded(command).await;
    let (code, stderr) = ended_without_panic(output, "host = \"\"");
    assert_ne!(code, 0, "the empty host path was accepted:\n{stderr}");
    assert!(
        stderr.contains("the `host` of a directory grant (grants.dirs) is empty"),
        "{stderr}"
    );
}

// Finding 12: egress by name and wildcards.

/// A hosts file mapping the test's names: `loop.test` and `api.loop.test` to 127.0.0.1,
/// `meta.test` to the cloud metadata address (never contacted: refused before connecting).
fn hosts_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("hosts");
    std::fs::write(
        &path,
        "127.0.0.1 loop.test api.loop.test\n169.254.169.254 meta.test\n",
    )
    .unwrap();
    path
}

/// `host call` of the misbehaving guest's `fetch` of `url`, with `grants` (TOML list items).
async fn fetch(dir: &Path, grants: &str, url: &str) -> (i32, String, String) {
    let manifest = dir.join("fetch.toml");
    std::fs::write(
        &manifest,
        format!("[components.misbehave]\npath = {MISBEHAVE:?}\ngrants.http = [{grants}]\n"),
    )
    .unwrap();
    let mut command = host();
    command
        .env("TOOLHOST_HOSTS_FILE", hosts_file(dir))
        .arg("call")
        .arg(&manifest)
        .args(["fetch", &json!({ "address": url }).to_string()]);
    let (output, _) = bounded(command).await;
    let what = format!("{grants} -> {url}");
    let stdout = output
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let (code, stderr) = ended_without_panic(output, &what);
    (code, stdout, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_grants_by_name_never_reach_internal_addresses() {
    let server = TestServer::start(|_| Reply::text(200, "inside")).await;
    let port = server.url().rsplit(':').next().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let refused = [
        // A wildcard matches names, not addresses.
        (
            "\"*.0.0.1\"".to_owned(),
            format!("http://127.0.0.1:{port}/"),
            "HTTP access to 127.0.0.1",
        ),
        // A granted name that resolves to loopback.
        (
            "\"loop.test\"".to_owned(),
            format!("http://loop.test:{port}/"),
            "which resolves to 127.0.0.1, a loopback address",
        ),
        (
            "\"*.loop.test\"".to_owned(),
            format!("http://api.loop.test:{port}/"),
            "which resolves to 127.0.0.1, a loopback address",
        ),
        // The cloud metadata address, refused before any connection.
        (
            "\"*.test\"".to_owned(),
            "http://meta.test/".to_owned(),
            "which resolves to 169.254.169.254, a link-local",
        ),
    ];
    for (grants, url, expected) in refused {
        let (code, stdout, stderr) = fetch(dir.path(), &grants, &url).await;
        assert_ne!(code, 0, "{grants} -> {url} went through: {stdout}");
        assert!(stderr.contains(expected), "{grants} -> {url}: {stderr}");
    }
    assert!(server.requests().is_empty(), "nothing reached the server");

    // Granting the address itself lets the name through, to the address the hosts file gave
    // (the system's resolver knows no `loop.test`: the checked address is the one used).
    let grants = format!("\"loop.test\", \"127.0.0.1:{port}\"");
    let (code, stdout, stderr) =
        fetch(dir.path(), &grants, &format!("http://loop.test:{port}/")).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("inside"), "{stdout}");
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        server.requests()[0].header("host"),
        Some(format!("loop.test:{port}").as_str()),
        "the request still names the host"
    );
}
