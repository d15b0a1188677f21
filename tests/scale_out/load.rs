//! Clients calling through HAProxy while one replica is killed, and what they saw.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_tests::load::{Failure, RpcClient, tool_text};
use toolhost_tests::mcp::HttpServer;

use crate::haproxy::Haproxy;

/// How long a client waits for any one answer.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);
const CLIENTS: usize = 8;
/// Calls every client makes before the kill.
const WARM_CALLS: u64 = 5;
/// How long the load goes on once HAProxy has marked the killed replica down.
const AFTER_DOWN: Duration = Duration::from_secs(2);

/// One call as a client saw it: when it started (since the kill; negative before), how long
/// it took, the replica its session was on, and what came back.
#[derive(Debug, Clone)]
struct Event {
    started: f64,
    took: Duration,
    session_on: Option<String>,
    outcome: Result<Option<String>, Failure>,
    wrong: Option<String>,
}

/// What the clients saw, and when HAProxy saw the kill.
#[derive(Debug, Default)]
pub struct Report {
    pub clients: usize,
    pub killed: String,
    pub sent: u64,
    pub answered: u64,
    pub errored: u64,
    pub wrong: Vec<String>,
    pub longest_wait: Duration,
    /// From the kill until HAProxy's stats showed the replica down.
    pub marked_down: Option<Duration>,
    /// From the kill until the start of the last call that failed.
    pub last_failure: Option<f64>,
    pub answered_after_down: u64,
    /// Calls started after the replica was marked down that failed, other than a session of
    /// the killed replica told it is gone.
    pub failed_after_down: Vec<String>,
    pub replicas_after_down: Vec<String>,
    /// Failures by kind ("HTTP 502", "HTTP 404 session not found", "timeout", ...).
    pub failures: Vec<(String, u64)>,
    pub sessions_on_killed: u64,
    pub session_not_found: u64,
    pub errors_elsewhere: Vec<String>,
    pub unsticky: Vec<String>,
    pub new_sessions_after_kill: u64,
    pub new_sessions_after_down: u64,
    /// With sessions: what a session of the killed replica, idle during the kill, got for a
    /// call made after the replica was marked down.
    pub idle_session: Option<Result<String, Failure>>,
    /// A few of the failures, whole.
    pub failure_samples: Vec<String>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms =
            |d: Option<Duration>| d.map_or("never".to_owned(), |d| format!("{} ms", d.as_millis()));
        write!(
            f,
            "{} clients; killed {}; {} calls sent: {} answered right, {} errored ({:?}); \
             marked down after {}; last failure started {}; {} answered after that; \
             longest wait {} ms; sessions on the killed replica {}, new sessions after the kill {}; \
             the idle session of the killed replica got {:?}; failures: {:?}",
            self.clients,
            self.killed,
            self.sent,
            self.answered,
            self.errored,
            self.failures,
            ms(self.marked_down),
            self.last_failure.map_or("never".to_owned(), |s| format!(
                "{:+.0} ms from the kill",
                s * 1e3
            )),
            self.answered_after_down,
            self.longest_wait.as_millis(),
            self.sessions_on_killed,
            self.new_sessions_after_kill,
            self.idle_session,
            self.failure_samples,
        )
    }
}

/// Shared by the clients and the one who kills.
struct Shared {
    stop: AtomicBool,
    /// Calls sent, counted before each is sent: an event is recorded for each after.
    sent: AtomicU64,
    next: AtomicU64,
    kill_at: Mutex<Option<Instant>>,
    events: Mutex<Vec<Event>>,
    /// (started since the kill, replica) of every session made.
    sessions: Mutex<Vec<(f64, Option<String>)>>,
    /// 1 for each client that has had its first answers.
    warm: Mutex<Vec<u64>>,
}

impl Shared {
    fn since_kill(&self, at: Instant) -> f64 {
        match *self.kill_at.lock().unwrap() {
            Some(kill) if at >= kill => (at - kill).as_secs_f64(),
            Some(kill) => -(kill - at).as_secs_f64(),
            None => f64::NEG_INFINITY,
        }
    }
}

/// One client: calls `add` until told to stop; with `sessions`, starts a session first and a
/// new one after any failure, as a real client would.
async fn client(index: usize, url: String, sessions: bool, shared: Arc<Shared>) -> Option<String> {
    let mut rpc = RpcClient::new(&url, CALL_TIMEOUT);
    let mut session_on: Option<Option<String>> = None;
    let mut first_session = None;
    let mut successes = 0;
    while !shared.stop.load(Ordering::Relaxed) {
        if sessions && session_on.is_none() {
            let began = Instant::now();
            match rpc.initialize().await {
                Ok(answer) => {
                    shared
                        .sessions
                        .lock()
                        .unwrap()
                        .push((shared.since_kill(began), answer.replica.clone()));
                    first_session.get_or_insert(answer.replica.clone());
                    session_on = Some(answer.replica);
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
            continue;
        }
        let n = shared.next.fetch_add(1, Ordering::Relaxed);
        let (a, b) = (n as f64, 0.25);
        shared.sent.fetch_add(1, Ordering::Relaxed);
        let began = Instant::now();
        let answer = rpc.call("add", &json!({ "a": a, "b": b })).await;
        let took = began.elapsed();
        let wrong = match &answer {
            Ok(answer) => match tool_text(&answer.message) {
                Ok(text)
                    if serde_json::from_str::<serde_json::Value>(text).ok()
                        == Some(json!({ "result": a + b })) =>
                {
                    None
                }
                Ok(text) => Some(format!("add({a}, {b}) answered {text}")),
                Err(error) => Some(error),
            },
            Err(_) => None,
        };
        let failed = answer.is_err();
        if !failed && wrong.is_none() {
            successes += 1;
            if successes == WARM_CALLS {
                shared.warm.lock().unwrap()[index] = 1;
            }
        }
        shared.events.lock().unwrap().push(Event {
            started: shared.since_kill(began),
            took,
            session_on: session_on.clone().flatten(),
            outcome: answer.map(|a| a.replica),
            wrong,
        });
        if failed {
            session_on = None;
        }
    }
    first_session.flatten()
}

/// Runs the clients through `haproxy`, kills one of `servers` once every client is warm,
/// and goes on until HAProxy has marked it down and [`AFTER_DOWN`] more.
pub async fn run(haproxy: &Haproxy, servers: &mut [HttpServer], sessions: bool) -> Report {
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        sent: AtomicU64::new(0),
        next: AtomicU64::new(0),
        kill_at: Mutex::new(None),
        events: Mutex::new(Vec::new()),
        sessions: Mutex::new(Vec::new()),
        warm: Mutex::new(vec![0; CLIENTS]),
    });
    // With sessions, the replica to kill is that of a session that stays idle until the
    // replica is marked down: the load's sessions get errors while it dies, this one after.
    let mut idle = RpcClient::new(&haproxy.url, CALL_TIMEOUT);
    let victim = if sessions {
        let answer = idle.initialize().await.expect("a session starts");
        answer.replica.expect("HAProxy named the replica")
    } else {
        "r1".to_owned()
    };
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|i| tokio::spawn(client(i, haproxy.url.clone(), sessions, shared.clone())))
        .collect();
    let warm = tokio::time::timeout(Duration::from_secs(60), async {
        while shared.warm.lock().unwrap().iter().sum::<u64>() < CLIENTS as u64 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(
        warm.is_ok(),
        "the clients did not all get {WARM_CALLS} answers within 60 s"
    );

    let index: usize = victim.trim_start_matches('r').parse().unwrap();
    let kill_at = Instant::now();
    *shared.kill_at.lock().unwrap() = Some(kill_at);
    servers[index].child.start_kill().expect("SIGKILL is sent");
    let marked_down = haproxy
        .wait_until(Duration::from_secs(10), |servers| {
            servers
                .iter()
                .any(|(name, status)| *name == victim && status.starts_with("DOWN"))
        })
        .await;
    let idle_session = match (sessions, marked_down) {
        (true, Some(_)) => Some(idle.call("add", &json!({ "a": 1, "b": 2 })).await.and_then(
            |answer| {
                tool_text(&answer.message)
                    .map(|text| format!("{text} from {:?}", answer.replica))
                    .map_err(Failure::NoAnswer)
            },
        )),
        _ => None,
    };
    tokio::time::sleep(AFTER_DOWN).await;
    shared.stop.store(true, Ordering::Relaxed);
    let mut first_sessions = Vec::new();
    for task in tasks {
        let ended = tokio::time::timeout(CALL_TIMEOUT * 3, task).await;
        first_sessions.push(ended.expect("a client stopped in time").expect("no panic"));
    }
    let events = shared.events.lock().unwrap().clone();
    let sessions_made = shared.sessions.lock().unwrap().clone();
    let mut report = tally(&events, &victim, marked_down);
    report.sent = shared.sent.load(Ordering::Relaxed);
    report.idle_session = idle_session;
    report.sessions_on_killed = first_sessions
        .iter()
        .filter(|s| s.as_deref() == Some(victim.as_str()))
        .count() as u64;
    let down_at = marked_down.map_or(f64::INFINITY, |d| d.as_secs_f64());
    report.new_sessions_after_kill =
        sessions_made.iter().filter(|(at, _)| *at >= 0.0).count() as u64;
    report.new_sessions_after_down = sessions_made
        .iter()
        .filter(|(at, _)| *at >= down_at)
        .count() as u64;
    report
}

/// Counts what the clients saw.
fn tally(events: &[Event], victim: &str, marked_down: Option<Duration>) -> Report {
    let down_at = marked_down.map_or(f64::INFINITY, |d| d.as_secs_f64());
    let mut report = Report {
        clients: CLIENTS,
        killed: victim.to_owned(),
        marked_down,
        ..Report::default()
    };
    let mut failures: std::collections::BTreeMap<String, u64> = Default::default();
    for event in events {
        report.longest_wait = report.longest_wait.max(event.took);
        let on_killed = event.session_on.as_deref() == Some(victim);
        match &event.outcome {
            Ok(replica) => {
                report.answered += 1;
                if let Some(wrong) = &event.wrong {
                    report.wrong.push(wrong.clone());
                }
                if event.session_on.is_some() && *replica != event.session_on {
                    report.unsticky.push(format!(
                        "{:?} answered a session of {:?}",
                        replica, event.session_on
                    ));
                }
                if event.started >= down_at {
                    report.answered_after_down += 1;
                    if let Some(replica) = replica
                        && !report.replicas_after_down.contains(replica)
                    {
                        report.replicas_after_down.push(replica.clone());
                    }
                }
            }
            Err(failure) => {
                report.errored += 1;
                if report.failure_samples.len() < 3 {
                    report.failure_samples.push(failure.to_string());
                }
                report.last_failure = Some(
                    report
                        .last_failure
                        .map_or(event.started, |l: f64| l.max(event.started)),
                );
                let not_found = matches!(failure, Failure::Status(404, body) if body.contains("Session not found"));
                let kind = match failure {
                    Failure::Timeout => "timeout".to_owned(),
                    Failure::Transport(_) => "transport".to_owned(),
                    Failure::Status(404, _) if not_found => "HTTP 404 session not found".to_owned(),
                    Failure::Status(status, _) => format!("HTTP {status}"),
                    Failure::NoAnswer(_) => "no answer".to_owned(),
                };
                *failures.entry(kind).or_default() += 1;
                if not_found {
                    report.session_not_found += 1;
                }
                if event.session_on.is_some() && !on_killed {
                    report
                        .errors_elsewhere
                        .push(format!("{:?}: {failure}", event.session_on));
                }
                if event.started >= down_at && !(on_killed && not_found) {
                    report
                        .failed_after_down
                        .push(format!("{:+.3} s: {failure}", event.started));
                }
            }
        }
    }
    report.failures = failures.into_iter().collect();
    report
}
