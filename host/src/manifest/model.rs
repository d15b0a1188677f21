//! [`ToolLimit`]: how many tools a request offers, as a manifest, a flag or the library
//! writes it ("all", or a number).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How many of the tools a request offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolLimit {
    /// Every tool (that the run's [`ToolSelection`](crate::agent::ToolSelection) allows).
    #[default]
    All,
    /// The `k` that best fit the conversation, and only those that share a word with it.
    Top(usize),
}

impl fmt::Display for ToolLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("all"),
            Self::Top(k) => write!(f, "{k}"),
        }
    }
}

impl FromStr for ToolLimit {
    type Err = String;

    /// `all`, or a number of tools (at least 1).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "all" => Ok(Self::All),
            number => match number.parse::<usize>() {
                Ok(k) if k > 0 => Ok(Self::Top(k)),
                _ => Err(format!(
                    "`{text}` is not a tool limit; write \"all\" or how many tools to offer, \
                     such as 3"
                )),
            },
        }
    }
}

impl Serialize for ToolLimit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::All => serializer.serialize_str("all"),
            Self::Top(k) => serializer.serialize_u64(*k as u64),
        }
    }
}

impl<'de> Deserialize<'de> for ToolLimit {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Count(i64),
            Text(String),
        }
        let text = match Raw::deserialize(deserializer)? {
            Raw::Count(k) => k.to_string(),
            Raw::Text(text) => text,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_from_text_and_toml() {
        assert_eq!("all".parse::<ToolLimit>(), Ok(ToolLimit::All));
        assert_eq!("3".parse::<ToolLimit>(), Ok(ToolLimit::Top(3)));
        let error = "0".parse::<ToolLimit>().unwrap_err();
        assert!(error.contains("such as 3"), "{error}");
        #[derive(Deserialize)]
        struct T {
            tools: ToolLimit,
        }
        let read = |text: &str| toml::from_str::<T>(text).map(|t| t.tools);
        assert_eq!(read("tools = 4").ok(), Some(ToolLimit::Top(4)));
        assert_eq!(read("tools = \"all\"").ok(), Some(ToolLimit::All));
        let error = read("tools = \"some\"").unwrap_err().to_string();
        assert!(error.contains("`some` is not a tool limit"), "{error}");
        assert!(read("tools = -1").is_err());
    }
}
