//! A part of a toolhost result (or a prompt's message) as an MCP content block: what `host mcp`
//! sends. The other way, a server's blocks as parts, is the client's (`mcp::client::result`).

use rmcp::model::{ContentBlock, ResourceContents};

use crate::content::ContentPart;

/// A part of a toolhost result as an MCP content block.
pub(super) fn block(part: ContentPart) -> ContentBlock {
    match part {
        ContentPart::Text { text } => ContentBlock::text(text),
        ContentPart::Image(image) => ContentBlock::image(image.data, image.mime_type),
        ContentPart::Audio(audio) => {
            ContentBlock::Audio(rmcp::model::AudioContent::new(audio.data, audio.mime_type))
        }
        ContentPart::ResourceLink(link) => {
            let mut resource = rmcp::model::Resource::new(link.uri, link.name);
            resource.description = link.description;
            resource.mime_type = link.mime_type;
            ContentBlock::resource_link(resource)
        }
        ContentPart::Resource(resource) => {
            let contents = match (resource.text, resource.blob) {
                (Some(text), _) => ResourceContents::TextResourceContents {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    text,
                    meta: None,
                },
                (None, blob) => ResourceContents::BlobResourceContents {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    blob: blob.unwrap_or_default(),
                    meta: None,
                },
            };
            ContentBlock::Resource(rmcp::model::EmbeddedResource::new(contents))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{EmbeddedResource, Media, ResourceLink};

    #[test]
    fn every_kind_of_part_becomes_its_block() {
        let parts = vec![
            ContentPart::Text {
                text: "Here it is:".into(),
            },
            ContentPart::Image(Media {
                mime_type: "image/png".into(),
                data: "aGVsbG8=".into(),
            }),
            ContentPart::ResourceLink(ResourceLink {
                uri: "file:///a.txt".into(),
                name: "a.txt".into(),
                description: None,
                mime_type: None,
            }),
            ContentPart::Resource(EmbeddedResource {
                uri: "file:///b.txt".into(),
                mime_type: Some("text/plain".into()),
                text: Some("b".into()),
                blob: None,
            }),
        ];
        assert_eq!(
            parts.into_iter().map(block).collect::<Vec<_>>(),
            vec![
                ContentBlock::text("Here it is:"),
                ContentBlock::image("aGVsbG8=", "image/png"),
                ContentBlock::resource_link(rmcp::model::Resource::new("file:///a.txt", "a.txt")),
                ContentBlock::Resource(rmcp::model::EmbeddedResource::new(
                    ResourceContents::TextResourceContents {
                        uri: "file:///b.txt".into(),
                        mime_type: Some("text/plain".into()),
                        text: "b".into(),
                        meta: None,
                    }
                )),
            ]
        );
    }
}
