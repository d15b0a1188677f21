//! Limits on every call: memory, CPU time, wall-clock time, result and log sizes.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The limits every call of a tool component runs under. Exceeding one ends that call with a
/// typed [`CallError`](crate::CallError); the host keeps running.
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

/// A size in bytes, written `64MiB`, `512 KiB`, `2GB` or as a plain number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kib" => 1 << 10,
            "m" | "mib" => 1 << 20,
            "g" | "gib" => 1 << 30,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            _ => u64::MAX,
        };
        number
            .parse::<u64>()
            .ok()
            .filter(|_| multiplier != u64::MAX)
            .and_then(|n| n.checked_mul(multiplier))
            .map(ByteSize)
            .ok_or_else(|| {
                format!("`{text}` is not a size; write it like `64MiB`, `512KiB` or `1GiB`")
            })
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.0))
    }
}

/// A duration, written like `5s`, `500ms` or `2m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl FromStr for HumanDuration {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        humantime::parse_duration(text.trim())
            .map(HumanDuration)
            .map_err(|e| format!("`{text}` is not a duration ({e}); write it like `5s` or `500ms`"))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bytes(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Bytes(n) => Ok(ByteSize(n)),
            Raw::Text(text) => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// `bytes` in the largest binary unit that keeps it readable: `64 MiB`, `1.5 KiB`, `12 B`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 {
        format!("{value} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_and_decimal_units() {
        assert_eq!("64MiB".parse(), Ok(ByteSize(64 << 20)));
        assert_eq!("512 KiB".parse(), Ok(ByteSize(512 << 10)));
        assert_eq!("2GB".parse(), Ok(ByteSize(2_000_000_000)));
        assert_eq!("100".parse(), Ok(ByteSize(100)));
        assert!("64 parsecs".parse::<ByteSize>().is_err());
        assert!("MiB".parse::<ByteSize>().is_err());
    }

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
    fn bytes_format_readably() {
        assert_eq!(format_bytes(64 << 20), "64 MiB");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(12), "12 B");
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
