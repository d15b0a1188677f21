//! Each caller's fair share of `host mcp --http` (`[mcp.per_caller]`): a token bucket of
//! requests and a cap on tool calls running at once, per caller, so that one caller flooding
//! the server is held back while the others are served as before.
//!
//! Each caller has a line of its own: a request past its caller's rate, or a call past its
//! caller's cap, waits there (up to [`MAX_WAIT`]) for its caller's next turn, and only then is
//! refused (HTTP 429 with `Retry-After`, and a JSON-RPC error with the request's id). A
//! flooding client that does not honour `Retry-After` is so paced at its own allowance instead
//! of spinning on refusals that would take turns from the others; no caller ever waits behind
//! another's requests. The check comes right after the token's and the body's JSON parse,
//! before any other work.
//!
//! Callers are told apart by [`identity::caller_key`](super::identity::caller_key) (issuer and
//! subject); requests without a verified caller share one allowance. The tables of callers are
//! bounded: past [`MAX_CALLERS`] at once, those idle are forgotten, and if there are still
//! too many, the callers beyond share one allowance (a flood of new subjects cannot grow memory
//! without end).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use governor::clock::Clock as _;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::{Response, StatusCode, header};
use http_body_util::BodyExt as _;
use http_body_util::Full;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::lock;
use super::service::ResponseBody;
use crate::manifest::PerCallerLimits;
use crate::telemetry::metrics::metrics;

/// The most callers whose allowance is kept apart at once.
pub(super) const MAX_CALLERS: usize = 10_000;

/// Where the callers beyond [`MAX_CALLERS`] are counted.
const OVERFLOW: &str = "(callers beyond the table)";

/// The JSON-RPC error code of a refusal: a server error of the implementation-defined range
/// (MCP defines none for this; the HTTP status and `Retry-After` are what clients act on).
const TOO_MANY: i64 = -32000;

/// The per-caller limits in force (none when `[mcp.per_caller]` sets nothing).
pub(super) struct FairShare {
    requests: Option<DefaultKeyedRateLimiter<String>>,
    calls: Option<InFlight>,
}

/// Tool calls running per caller, each caller up to `cap`.
struct InFlight {
    cap: usize,
    callers: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// The longest a request waits in its caller's line before it is refused.
pub(super) const MAX_WAIT: Duration = Duration::from_millis(500);

/// What lets a request through: for a tool call, its place among its caller's calls, held
/// until its answer has been sent.
pub(super) struct Admitted(Option<OwnedSemaphorePermit>);

impl FairShare {
    /// The limits `limits` set.
    pub(super) fn new(limits: &PerCallerLimits) -> Self {
        let requests = limits.rate.map(|rate| {
            let burst = limits.burst.unwrap_or(rate);
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        let calls = limits.calls.map(|cap| InFlight {
            cap: usize::try_from(cap.get()).unwrap_or(usize::MAX),
            callers: Mutex::default(),
        });
        Self { requests, calls }
    }

    /// Lets a request of the caller `key` through, once its caller's allowance has room for
    /// it (waiting up to [`MAX_WAIT`] in the caller's line), or answers it 429 (`id`: the
    /// request's, if it is a request); a `tools/call` (`is_call`) also takes a place among
    /// its caller's calls.
    pub(super) async fn admit(
        &self,
        key: &str,
        is_call: bool,
        id: Option<&Value>,
    ) -> Result<Admitted, Box<Response<ResponseBody>>> {
        let deadline = Instant::now() + MAX_WAIT;
        if let Some(requests) = &self.requests {
            let key = tracked(key, requests);
            while let Err(refused) = requests.check_key(&key) {
                let wait = refused.wait_time_from(requests.clock().now());
                if Instant::now() + wait > deadline {
                    let message = "too many requests from this caller ([mcp.per_caller] rate); \
                                   try again after the time Retry-After says";
                    metrics().refused("rate_limit");
                    return Err(Box::new(too_many(wait, message, id)));
                }
                tokio::time::sleep(wait).await;
            }
        }
        let permit = match (&self.calls, is_call) {
            (Some(calls), true) => Some(calls.enter(key, deadline).await.ok_or_else(|| {
                metrics().refused("calls_per_caller");
                let message = format!(
                    "this caller has {} tool calls running, the most it may ([mcp.per_caller] \
                     calls); try again when one has finished",
                    calls.cap
                );
                Box::new(too_many(Duration::from_secs(1), &message, id))
            })?),
            _ => None,
        };
        Ok(Admitted(permit))
    }
}

/// The key `key` is counted under in `requests`: its own, unless the table is full of callers
/// that are not idle.
fn tracked(key: &str, requests: &DefaultKeyedRateLimiter<String>) -> String {
    if requests.len() >= MAX_CALLERS {
        requests.retain_recent();
        requests.shrink_to_fit();
        if requests.len() >= MAX_CALLERS {
            return OVERFLOW.to_owned();
        }
    }
    key.to_owned()
}

impl InFlight {
    /// A place among `key`'s calls, once one is free (in the order they were asked for), if
    /// before `deadline`.
    async fn enter(&self, key: &str, deadline: Instant) -> Option<OwnedSemaphorePermit> {
        let semaphore = {
            let mut callers = lock(&self.callers);
            if callers.len() >= MAX_CALLERS && !callers.contains_key(key) {
                // Forget the callers with no call running.
                callers.retain(|_, semaphore| Arc::strong_count(semaphore) > 1);
            }
            let key = if callers.len() >= MAX_CALLERS && !callers.contains_key(key) {
                OVERFLOW
            } else {
                key
            };
            let cap = self.cap;
            callers
                .entry(key.to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(cap)))
                .clone()
        };
        let place = tokio::time::timeout_at(deadline, semaphore.acquire_owned()).await;
        place.ok()?.ok()
    }
}

impl Admitted {
    /// A request let through without a place to hold.
    pub(super) fn free() -> Self {
        Self(None)
    }

    /// `response`, holding the request's place until its body has been sent (or dropped).
    pub(super) fn hold(self, response: Response<ResponseBody>) -> Response<ResponseBody> {
        let Some(permit) = self.0 else {
            return response;
        };
        let (parts, body) = response.into_parts();
        let body = body.map_frame(move |frame| {
            let _held = &permit;
            frame
        });
        Response::from_parts(parts, body.boxed())
    }
}

/// 429 with `Retry-After` (whole seconds, at least 1) and a JSON-RPC error saying why.
fn too_many(wait: Duration, message: &str, id: Option<&Value>) -> Response<ResponseBody> {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let body = json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": { "code": TOO_MANY, "message": message },
    });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    headers.insert(header::RETRY_AFTER, http::HeaderValue::from(seconds.max(1)));
    response
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;

    use super::*;

    fn limits(rate: u32, burst: u32, calls: u32) -> PerCallerLimits {
        PerCallerLimits {
            rate: NonZeroU32::new(rate),
            burst: NonZeroU32::new(burst),
            calls: NonZeroU32::new(calls),
        }
    }

    #[tokio::test]
    async fn a_caller_past_its_burst_is_refused_and_the_others_are_not() {
        let fair = FairShare::new(&limits(1, 3, 0));
        for _ in 0..3 {
            assert!(fair.admit("flooder", false, None).await.is_ok());
        }
        // Its next turn is a second away, past the longest wait: refused at once.
        let refused = fair
            .admit("flooder", false, Some(&json!(7)))
            .await
            .err()
            .expect("past the burst");
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        let retry: u64 = (refused.headers().get(header::RETRY_AFTER))
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse().ok())
            .expect("a Retry-After in seconds");
        assert!(retry >= 1);
        let body = refused
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        let body: Value = serde_json::from_slice(&body).expect("JSON-RPC");
        assert_eq!(
            (body["id"].clone(), body["error"]["code"].clone()),
            (json!(7), json!(TOO_MANY))
        );
        // Another caller still has its whole burst.
        for _ in 0..3 {
            assert!(fair.admit("quiet", false, None).await.is_ok());
        }
    }

    #[tokio::test]
    async fn a_request_whose_turn_is_near_waits_for_it_in_its_callers_line() {
        // 100 a second, one at a time: the second request's turn is 10 ms away.
        let fair = FairShare::new(&limits(100, 1, 0));
        assert!(fair.admit("steady", false, None).await.is_ok());
        assert!(fair.admit("steady", false, None).await.is_ok());
    }

    #[tokio::test]
    async fn a_callers_calls_past_its_cap_wait_their_turn_or_are_refused() {
        let fair = Arc::new(FairShare::new(&limits(0, 0, 2)));
        let (Ok(first), Ok(_second)) = (
            fair.admit("alice", true, None).await,
            fair.admit("alice", true, None).await,
        ) else {
            panic!("two places");
        };
        // No place frees up within the longest wait: refused.
        assert!(fair.admit("alice", true, None).await.is_err());
        // Other requests of alice's, and bob's calls, are not held back.
        assert!(fair.admit("alice", false, None).await.is_ok());
        assert!(fair.admit("bob", true, None).await.is_ok());
        // A third call waits in alice's line; the place is held until the answer is dropped.
        let answer = first.hold(Response::new(Full::new(Bytes::new()).boxed()));
        let waiting = tokio::spawn({
            let fair = fair.clone();
            async move { fair.admit("alice", true, None).await.is_ok() }
        });
        tokio::time::sleep(MAX_WAIT / 2).await;
        assert!(
            !waiting.is_finished(),
            "it waits while both places are held"
        );
        drop(answer);
        assert!(
            waiting.await.expect("the waiting call"),
            "it gets the freed place"
        );
    }

    #[tokio::test]
    async fn nothing_is_limited_by_default() {
        let fair = FairShare::new(&PerCallerLimits::default());
        for _ in 0..1000 {
            assert!(fair.admit("anyone", true, None).await.is_ok());
        }
    }

    #[tokio::test]
    async fn a_flood_of_new_callers_is_bounded() {
        let fair = FairShare::new(&limits(1, 1, 1));
        let mut held = Vec::new();
        for n in 0..MAX_CALLERS + 50 {
            if let Ok(admitted) = fair.admit(&format!("caller-{n}"), true, None).await {
                held.push(admitted);
            }
        }
        let requests = fair.requests.as_ref().expect("a rate");
        assert!(requests.len() <= MAX_CALLERS + 1, "{}", requests.len());
        let calls = lock(&fair.calls.as_ref().expect("a cap").callers).len();
        assert!(calls <= MAX_CALLERS + 1, "{calls}");
    }
}
