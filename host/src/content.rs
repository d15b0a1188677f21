//! The parts of a tool's result beyond one text: images, audio, links to resources and
//! embedded resources, as tool contract 0.2 and MCP have them. Bytes are kept base64-encoded,
//! the way MCP and the model APIs carry them, so a part passes through the host without being
//! copied into another form.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::units::format_bytes;

/// One part of a tool's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text for the model.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image(Media),
    /// A sound.
    Audio(Media),
    /// A link to a resource the client can read or fetch itself.
    ResourceLink(ResourceLink),
    /// A resource with its contents.
    Resource(EmbeddedResource),
}

/// Bytes with their media type (an image's or a sound's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Media {
    /// The media type: `image/png`, `audio/wav`, ...
    pub mime_type: String,
    /// The bytes, base64-encoded (as MCP and the model APIs carry them).
    pub data: String,
}

impl Media {
    /// How many bytes it has, decoded (without decoding it).
    pub fn size(&self) -> usize {
        decoded_size(&self.data)
    }
}

/// A pointer to a resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceLink {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A resource included in a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// Its URI.
    pub uri: String,
    /// Its media type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text, for a text resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its bytes, base64-encoded, for a binary one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl ContentPart {
    /// The part as a model reads it in a tool result that is text only: text as it is, a
    /// text resource whole, everything else named in brackets (an image goes to the model as
    /// an image where its wire format takes one, see [`Media`]).
    pub fn model_text(&self) -> String {
        match self {
            Self::Text { text } => text.clone(),
            Self::Image(image) => format!(
                "[image ({}, {}) not shown]",
                image.mime_type,
                format_bytes(image.size() as u64)
            ),
            Self::Audio(audio) => format!(
                "[audio ({}, {}) not shown]",
                audio.mime_type,
                format_bytes(audio.size() as u64)
            ),
            Self::ResourceLink(link) => {
                let about = link
                    .description
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                format!("[resource link {} <{}>{about}]", link.name, link.uri)
            }
            Self::Resource(resource) => match (&resource.text, &resource.blob) {
                (Some(text), _) => format!("[resource {}]\n{text}", resource.uri),
                (None, blob) => format!(
                    "[resource {} ({}, {}) not shown]",
                    resource.uri,
                    resource.mime_type.as_deref().unwrap_or("binary"),
                    format_bytes(blob.as_deref().map_or(0, decoded_size) as u64)
                ),
            },
        }
    }

    /// How many bytes the part takes as it is carried (text, base64), for the result-size
    /// limit.
    pub fn carried_size(&self) -> usize {
        match self {
            Self::Text { text } => text.len(),
            Self::Image(media) | Self::Audio(media) => media.data.len() + media.mime_type.len(),
            Self::ResourceLink(link) => {
                link.uri.len()
                    + link.name.len()
                    + link.description.as_ref().map_or(0, String::len)
                    + link.mime_type.as_ref().map_or(0, String::len)
            }
            Self::Resource(resource) => {
                resource.uri.len()
                    + resource.mime_type.as_ref().map_or(0, String::len)
                    + resource.text.as_ref().map_or(0, String::len)
                    + resource.blob.as_ref().map_or(0, String::len)
            }
        }
    }
}

/// The methods a tool may ask with, and the client capability each needs.
pub const INPUT_METHODS: [(&str, &str); 3] = [
    ("elicitation/create", "elicitation"),
    ("sampling/createMessage", "sampling"),
    ("roots/list", "roots"),
];

/// What a tool needs before it can finish a call (tool contract 0.2's `input-required`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRequired {
    /// The requests, by the keys the tool gave them.
    pub requests: std::collections::BTreeMap<String, InputRequest>,
    /// The tool's state, given back to it with the answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// When the tool is an MCP server's and the call waits in a task there (the MCP tasks
    /// extension) that asks for these answers: the task's id. The next round sends the
    /// answers to that task and follows it, instead of calling the tool again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// One thing a tool asks for: an MCP request (`elicitation/create`, `sampling/createMessage`,
/// `roots/list`) with its params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRequest {
    /// The MCP method.
    pub method: String,
    /// Its params (an object).
    #[serde(default)]
    pub params: serde_json::Value,
}

impl InputRequest {
    /// The client capability answering it needs (`elicitation`, `sampling`, `roots`).
    pub fn capability(&self) -> &'static str {
        INPUT_METHODS
            .iter()
            .find(|(method, _)| *method == self.method)
            .map_or("unknown", |(_, capability)| capability)
    }
}

/// How many bytes a base64 text decodes to (without decoding it).
fn decoded_size(base64: &str) -> usize {
    let padding = base64.bytes().rev().take_while(|&b| b == b'=').count();
    (base64.len() / 4 * 3).saturating_sub(padding.min(2))
}

/// `bytes` base64-encoded (standard alphabet, padded), as MCP carries them.
pub(crate) fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Why `data` is not the standard base64 that MCP carries, if it is not. (What MCP servers
/// send is checked with it: unused without the `mcp-client` feature.)
#[cfg_attr(not(feature = "mcp-client"), allow(dead_code))]
pub(crate) fn check_base64(data: &str) -> Result<(), String> {
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map(|_| ())
        .map_err(|e| format!("is not valid base64 ({e})"))
}

/// Why `mime_type` is not a media type of `kind` (`image`, `audio`), if it is not: it must be
/// `kind/subtype`, the subtype made of letters, digits and `.+-`.
pub(crate) fn check_mime_type(mime_type: &str, kind: &str) -> Result<(), String> {
    let subtype = mime_type
        .strip_prefix(kind)
        .and_then(|rest| rest.strip_prefix('/'));
    match subtype {
        Some(subtype)
            if !subtype.is_empty()
                && subtype.len() <= 64
                && subtype
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "has the media type {:?}, which is not an {kind} type; use `{kind}/SUBTYPE`, such as \
             `{}`",
            mime_type.chars().take(80).collect::<String>(),
            if kind == "image" {
                "image/png"
            } else {
                "audio/wav"
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_must_be_of_their_kind() {
        assert!(check_mime_type("image/png", "image").is_ok());
        assert!(check_mime_type("image/svg+xml", "image").is_ok());
        assert!(check_mime_type("audio/wav", "audio").is_ok());
        for bad in [
            "image/",
            "text/plain",
            "imagepng",
            "image/png; x=1",
            "",
            "audio/wav",
        ] {
            let error = check_mime_type(bad, "image").unwrap_err();
            assert!(error.contains("image/png"), "{bad}: {error}");
        }
    }

    #[test]
    fn sizes_are_counted_without_decoding() {
        let data = encode(&[7u8; 1000]);
        let image = Media {
            mime_type: "image/png".into(),
            data,
        };
        assert_eq!(image.size(), 1000);
        assert!(check_base64(&image.data).is_ok());
        assert!(check_base64("not base64!").is_err());
    }

    #[test]
    fn parts_read_as_text_name_what_is_not_shown() {
        let audio = ContentPart::Audio(Media {
            mime_type: "audio/wav".into(),
            data: encode(&[0u8; 2048]),
        });
        assert_eq!(audio.model_text(), "[audio (audio/wav, 2 KiB) not shown]");
        let resource = ContentPart::Resource(EmbeddedResource {
            uri: "test://doc".into(),
            mime_type: Some("text/plain".into()),
            text: Some("the text".into()),
            blob: None,
        });
        assert_eq!(resource.model_text(), "[resource test://doc]\nthe text");
        let serialized = serde_json::to_value(&audio).unwrap_or_default();
        assert_eq!(serialized["type"], "audio");
        assert_eq!(serialized["mime_type"], "audio/wav");
    }
}
