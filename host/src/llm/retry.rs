//! When a request to a model server is retried, and after how long: the waits a server asks
//! for (`Retry-After`), and otherwise exponential waits with jitter (backon).

use std::time::{Duration, SystemTime};

use backon::{BackoffBuilder as _, ExponentialBuilder};

/// The waits before retries, for requests that were not told how long to wait: from `first`
/// (`HttpOptions::initial_backoff`), doubling up to half of `allowed` (the longest wait
/// allowed: `max_backoff`, never over `timeout`), each plus a random part of up to as much
/// again, so that clients refused together (replicas on a 429) spread out, and none over
/// `allowed`. `seed` makes the random parts repeatable (tests).
pub(super) fn backoff(
    first: Duration,
    allowed: Duration,
    seed: Option<u64>,
) -> impl Iterator<Item = Duration> + use<> {
    let mut builder = ExponentialBuilder::default()
        .with_min_delay(first)
        .with_max_delay(allowed / 2)
        .with_factor(2.0)
        .with_jitter()
        .without_max_times();
    if let Some(seed) = seed {
        builder = builder.with_jitter_seed(seed);
    }
    builder.build().map(move |wait| wait.min(allowed))
}

/// A `Retry-After` (seconds or an HTTP date) or `retry-after-ms` header, as a wait: `None`
/// without one, `Some(None)` for a wait too long to hold (`inf`, `1e30`), which no caller
/// waits for. A negative or unreadable value asks for no wait.
pub(super) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Option<Duration>> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let seconds = |seconds: f64| match seconds {
        s if s.is_nan() || s <= 0.0 => Some(Duration::ZERO),
        s => Duration::try_from_secs_f64(s).ok(),
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(seconds(ms / 1000.0));
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Some(seconds(secs));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(Some(
        date.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_before_retries_double_within_their_bounds_with_a_random_part() {
        let (first, allowed) = (Duration::from_millis(100), Duration::from_secs(2));
        for seed in 0..50 {
            let waits: Vec<Duration> = backoff(first, allowed, Some(seed)).take(10).collect();
            for (n, wait) in waits.iter().enumerate() {
                // 100, 200, 400, 800 ms, then half the longest wait allowed; backon counts
                // in f32 seconds, hence the microsecond either way.
                let base = Duration::from_millis(100 << n.min(4)).min(allowed / 2);
                let slack = Duration::from_micros(1);
                assert!(
                    base - slack <= *wait && *wait <= (base * 2).min(allowed) + slack,
                    "seed {seed}, retry {n}: {wait:?} is outside {base:?}..{:?}",
                    base * 2
                );
            }
        }
        // The random part differs from client to client (seed to seed), also at the bound:
        // no two clients turned away together come back together.
        for retry in [0, 9] {
            let waits: std::collections::HashSet<Duration> = (0..50)
                .map(|seed| backoff(first, allowed, Some(seed)).nth(retry).unwrap())
                .collect();
            assert!(waits.len() > 40, "retry {retry}: {waits:?}");
        }
        // Without a seed, each client draws its own.
        let first: Vec<Duration> = (0..20)
            .map(|_| backoff(first, allowed, None).next().unwrap())
            .collect();
        assert!(first.iter().any(|wait| *wait != first[0]), "{first:?}");
    }

    #[test]
    fn a_wait_longer_than_the_longest_allowed_is_cut_to_it() {
        // The longest wait allowed (10 s: a timeout under `max_backoff`) bounds every wait, a
        // first wait of 30 s too; past the first, the waits keep their random part between
        // half of it and all of it.
        let (first, allowed) = (Duration::from_secs(30), Duration::from_secs(10));
        let waits: Vec<Duration> = backoff(first, allowed, Some(7)).take(5).collect();
        assert_eq!(waits[0], Duration::from_secs(10));
        for wait in &waits[1..] {
            assert!(
                Duration::from_secs(5) <= *wait && *wait <= Duration::from_secs(10),
                "{waits:?}"
            );
        }
        assert!(waits[1..].iter().any(|wait| *wait != waits[1]), "{waits:?}");
    }

    #[test]
    fn retry_after_accepts_seconds_and_milliseconds() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Some(Duration::from_secs(2))));
        headers.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(
            retry_after(&headers),
            Some(Some(Duration::from_millis(150)))
        );
    }

    #[test]
    fn a_retry_after_too_long_to_hold_is_read_without_a_panic() {
        for (name, value) in [
            ("retry-after", "inf"),
            ("retry-after", "1e20"),
            ("retry-after-ms", "1e30"),
            ("retry-after", "-inf"),
            ("retry-after", "NaN"),
        ] {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert(name, value.parse().unwrap());
            let wait = retry_after(&headers).expect("a header");
            match value {
                "-inf" | "NaN" => assert_eq!(wait, Some(Duration::ZERO), "{name}: {value}"),
                _ => assert_eq!(wait, None, "{name}: {value}"),
            }
        }
    }
}
