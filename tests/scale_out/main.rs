//! Scaling out: three replicas of `host mcp --http` on loopback behind HAProxy (Debian's
//! package, on PATH), with health checks on `GET /health` and, with sessions, sticky routing
//! by `Mcp-Session-Id`. Clients call through HAProxy while one replica is killed (SIGKILL):
//! every call is answered right or gets an error (counted; nothing lost), no client waits
//! past its timeout, and the calls that start once HAProxy has marked the replica down all
//! succeed. The replicas share one compile cache, warmed before they start and not written
//! by them (docs/deploy.md). The tasks leg (`tasks.rs`) runs tasks across the replicas through
//! one Redis, and kills the replica running one.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod haproxy;
mod load;
mod tasks;
mod tokens;

use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::load::Failure;
use toolhost_tests::mcp::{HttpServer, host_command};

use haproxy::Haproxy;
use load::{Report, run};

pub(crate) const REPLICAS: usize = 3;

/// Three replicas serving `manifest`, sharing `cache`, with `extra` arguments.
async fn replicas(manifest: &Path, cache: &Path, extra: &[&str]) -> Vec<HttpServer> {
    let cache = cache.to_str().unwrap();
    let mut started = Vec::new();
    for _ in 0..REPLICAS {
        let mut args = vec![manifest.to_str().unwrap()];
        args.extend_from_slice(extra);
        started.push(HttpServer::start(&args, &[("TOOLHOST_COMPONENT_CACHE", cache)]).await);
    }
    started
}

/// The replicas' files: a manifest with the calculator, and a compile cache with it
/// compiled (the warm-up of an image build: `host tools`), then made read-only.
struct Shared {
    dir: TempDir,
    /// What the cache held after the warm-up.
    warmed: Vec<String>,
}

impl Shared {
    fn manifest(&self) -> PathBuf {
        self.dir.path().join("toolhost.toml")
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("components")
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Writable again, so the temporary directory can be removed.
        set_mode(&self.cache(), 0o700, 0o600);
    }
}

async fn warm_cache() -> Shared {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("toolhost.toml");
    std::fs::write(
        &manifest,
        format!("[components.calculator]\npath = {CALCULATOR:?}\n"),
    )
    .unwrap();
    let cache = dir.path().join("components");
    let output = host_command()
        .env("TOOLHOST_COMPONENT_CACHE", &cache)
        .arg("tools")
        .arg(&manifest)
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let listing = listing(&cache);
    assert!(
        listing.iter().any(|name| name.ends_with(".cwasm")),
        "the warm-up compiled nothing into {}: {listing:?}",
        cache.display()
    );
    set_mode(&cache, 0o500, 0o400);
    Shared {
        dir,
        warmed: listing,
    }
}

/// Every file under `dir`, relative to it, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                names.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    names.sort();
    names
}

/// Sets the mode of `dir` and of the directories in it to `dirs`, of its files to `files`.
fn set_mode(dir: &Path, dirs: u32, files: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    let mut pending = vec![dir.to_owned()];
    while let Some(current) = pending.pop() {
        // Writable and searchable while its entries change.
        let _ = std::fs::set_permissions(&current, std::fs::Permissions::from_mode(0o700));
        for entry in std::fs::read_dir(&current).into_iter().flatten() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(files));
            }
        }
        let _ = std::fs::set_permissions(&current, std::fs::Permissions::from_mode(dirs));
    }
}

/// What every kill test asserts, whatever the mode.
fn assert_nothing_lost(report: &Report) {
    println!("{report}");
    assert!(report.sent > 0);
    assert_eq!(
        report.answered + report.errored,
        report.sent,
        "calls lost: {report}"
    );
    assert!(report.wrong.is_empty(), "wrong answers: {:?}", report.wrong);
    assert!(
        report.longest_wait <= load::CALL_TIMEOUT + Duration::from_millis(500),
        "a client waited {:?}, past its timeout of {:?}",
        report.longest_wait,
        load::CALL_TIMEOUT
    );
    let marked_down = report
        .marked_down
        .unwrap_or_else(|| panic!("HAProxy never marked the killed replica down: {report}"));
    assert!(
        marked_down < Duration::from_secs(5),
        "HAProxy took {marked_down:?} to mark the killed replica down"
    );
    assert!(
        report.answered_after_down > 0,
        "no call was made after the replica was marked down: {report}"
    );
    assert!(
        report.failed_after_down.is_empty(),
        "calls that started after HAProxy marked the replica down failed: {:?}",
        report.failed_after_down
    );
    assert!(
        report
            .replicas_after_down
            .iter()
            .all(|r| *r != report.killed),
        "{} answered after it was killed: {report}",
        report.killed
    );
}

#[tokio::test]
async fn stateless_replicas_lose_no_call_when_one_is_killed() {
    let shared = warm_cache().await;
    let mut servers = replicas(&shared.manifest(), &shared.cache(), &["--stateless"]).await;
    let authorities: Vec<String> = servers.iter().map(|s| s.authority.clone()).collect();
    let haproxy = Haproxy::start(&authorities, false).await;

    let report = run(&haproxy, &mut servers, false).await;
    assert_nothing_lost(&report);
    // Stateless: no call needs the replica that died, so a call fails only if it was in flight
    // there, or sent there before HAProxy knew (and then retried elsewhere when it could be).
    assert!(
        report.errored <= report.clients as u64 * 2,
        "more errors than calls that can have been in flight on the killed replica: {report}"
    );
    assert_eq!(
        listing(&shared.cache()),
        shared.warmed,
        "a replica wrote to the shared cache"
    );
}

#[tokio::test]
async fn sessions_stick_to_their_replica_and_a_dead_ones_get_a_clear_error() {
    let shared = warm_cache().await;
    let mut servers = replicas(&shared.manifest(), &shared.cache(), &[]).await;
    let authorities: Vec<String> = servers.iter().map(|s| s.authority.clone()).collect();
    let haproxy = Haproxy::start(&authorities, true).await;

    let report = run(&haproxy, &mut servers, true).await;
    assert_nothing_lost(&report);
    assert!(
        report.unsticky.is_empty(),
        "calls of one session reached another replica: {:?}",
        report.unsticky
    );
    assert!(
        report.sessions_on_killed > 0,
        "no session was on the killed replica: {report}"
    );
    assert!(
        report.errors_elsewhere.is_empty(),
        "sessions on the replicas that stayed up got errors: {:?}",
        report.errors_elsewhere
    );
    match &report.idle_session {
        Some(Err(Failure::Status(404, body))) if body.contains("Session not found") => {}
        other => panic!(
            "a session of the killed replica should get 404 Session not found, got {other:?}"
        ),
    }
    assert!(
        report.new_sessions_after_kill >= report.sessions_on_killed,
        "the clients of the killed replica did not all start new sessions: {report}"
    );
    assert_eq!(
        listing(&shared.cache()),
        shared.warmed,
        "a replica wrote to the shared cache"
    );
}
