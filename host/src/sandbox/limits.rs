//! Limits on every call: memory, CPU time, wall-clock time, result and log sizes.

use std::future::poll_fn;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::CallError;
use crate::units::{ByteSize, HumanDuration};

/// The limits every call of a tool component runs under. Exceeding one ends that call with a
/// typed [`CallError`](crate::error::CallError); the host keeps running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// The most linear memory (all of the instance's memories together), in bytes.
    pub memory: u64,
    /// The most time the tool may spend computing. Checked every few milliseconds by epoch
    /// interruption; waiting (for HTTP, for a sleep) does not count.
    pub cpu_time: Duration,
    /// The most time a call may take from start to result, waiting included.
    pub timeout: Duration,
    /// The largest result, in bytes.
    pub max_result: usize,
    /// How much of the tool's stdout and of its stderr the host keeps, in bytes each; the
    /// rest is dropped and counted.
    pub max_log: usize,
}

impl Default for Limits {
    /// 128 MiB of memory, 10 s of CPU time, a 30 s timeout, 1 MiB of result and 64 KiB of
    /// each log stream.
    fn default() -> Self {
        Self {
            memory: 128 * MIB,
            cpu_time: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            max_result: MIB as usize,
            max_log: 64 * 1024,
        }
    }
}

const MIB: u64 = 1024 * 1024;

impl Limits {
    /// Whether a result of `size` bytes from tool `tool` fits [`Limits::max_result`].
    pub(crate) fn check_result(&self, tool: &str, size: usize) -> Result<(), CallError> {
        if size > self.max_result {
            return Err(CallError::ResultTooLarge {
                tool: tool.to_owned(),
                size,
                limit: self.max_result,
            });
        }
        Ok(())
    }
}

/// Limits as written in a manifest or on the command line: each is optional and falls back to
/// the level above (a component's limits over the manifest's `[limits]` over
/// [`Limits::default`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// See [`Limits::memory`]; `"64MiB"`, `"1GiB"`, or a number of bytes.
    pub memory: Option<ByteSize>,
    /// See [`Limits::cpu_time`]; `"2s"`, `"500ms"`.
    pub cpu_time: Option<HumanDuration>,
    /// See [`Limits::timeout`].
    pub timeout: Option<HumanDuration>,
    /// See [`Limits::max_result`].
    pub max_result: Option<ByteSize>,
    /// See [`Limits::max_log`].
    pub max_log: Option<ByteSize>,
}

impl LimitsConfig {
    /// `base` with every limit set here replaced.
    pub fn apply(&self, base: Limits) -> Limits {
        let to_usize = |b: ByteSize| usize::try_from(b.0).unwrap_or(usize::MAX);
        Limits {
            memory: self.memory.map_or(base.memory, |b| b.0),
            cpu_time: self.cpu_time.map_or(base.cpu_time, |d| d.0),
            timeout: self.timeout.map_or(base.timeout, |d| d.0),
            max_result: self.max_result.map_or(base.max_result, to_usize),
            max_log: self.max_log.map_or(base.max_log, to_usize),
        }
    }
}

/// Keeps an instance's linear memories under [`Limits::memory`], and remembers when it had to
/// refuse, so a trap that follows is reported as a memory limit rather than a crash.
#[derive(Debug)]
pub(crate) struct MemoryLimiter {
    limit: u64,
    used: u64,
    pub(crate) exceeded: bool,
}

/// The most elements a table may grow to; far above what real components use.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

impl MemoryLimiter {
    pub(crate) fn new(limit: u64) -> Self {
        Self {
            limit,
            used: 0,
            exceeded: false,
        }
    }
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current) as u64;
        if self.used.saturating_add(growth) > self.limit {
            self.exceeded = true;
            return Ok(false);
        }
        self.used += growth;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// `work`, stopped at `deadline`: the wall-clock limit of a call. The timer is set up only if `work` does not finish at its
/// first poll, as a small tool's call does.
pub(crate) async fn within<F: Future>(
    deadline: Option<tokio::time::Instant>,
    work: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    let mut work = pin!(work);
    if let Poll::Ready(output) = poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await {
        return Ok(output);
    }
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, work).await,
        None => Ok(work.await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_overrides_only_what_it_sets() {
        let config = LimitsConfig {
            memory: Some(ByteSize(1 << 20)),
            ..Default::default()
        };
        let limits = config.apply(Limits::default());
        assert_eq!(limits.memory, 1 << 20);
        assert_eq!(limits.timeout, Limits::default().timeout);
    }

    #[test]
    fn the_limiter_counts_all_memories_together() {
        use wasmtime::ResourceLimiter;
        let mut limiter = MemoryLimiter::new(100);
        assert!(matches!(limiter.memory_growing(0, 60, None), Ok(true)));
        assert!(matches!(limiter.memory_growing(0, 60, None), Ok(false)));
        assert!(limiter.exceeded);
    }
}
