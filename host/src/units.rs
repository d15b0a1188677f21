//! Units of what users write and read: sizes in bytes (`64MiB`), durations (`5s`), and
//! durations in JSON output (milliseconds).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

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

/// Serializes a duration as milliseconds, a float: the one duration unit of every JSON output.
pub(crate) fn serialize_millis<S: serde::Serializer>(
    d: &Duration,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// Reads a duration written by [`serialize_millis`].
pub(crate) fn deserialize_millis<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Duration, D::Error> {
    let millis = <f64 as Deserialize>::deserialize(d)?;
    Duration::try_from_secs_f64(millis / 1000.0).map_err(serde::de::Error::custom)
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
    fn bytes_format_readably() {
        assert_eq!(format_bytes(64 << 20), "64 MiB");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(12), "12 B");
    }
}
