//! Rich tool output: [`Content`], a list of content blocks (text, image, audio,
//! embedded resource) in the shape MCP clients render.

use serde::{Deserialize, Serialize};

/// A tool output made of content blocks rather than one JSON value.
///
/// In-app callers get its JSON form, `{"content": [{"type": "text", "text": …}, …]}`
/// (MCP's shape); the MCP server sends the blocks as the result's `content` (and
/// no `structuredContent`).
///
/// ```
/// use toolmark::Content;
///
/// let out = Content::text("Here is the chart:").image("iVBORw0KGgo=", "image/png");
/// assert_eq!(
///     serde_json::to_value(&out).unwrap(),
///     serde_json::json!({"content": [
///         {"type": "text", "text": "Here is the chart:"},
///         {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
///     ]})
/// );
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Content {
    /// The blocks, in order.
    pub content: Vec<ContentBlock>,
}

/// One block of [`Content`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Image {
        /// The image bytes, base64.
        data: String,
        /// Its MIME type (`image/png`).
        mime_type: String,
    },
    /// Audio, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Audio {
        /// The audio bytes, base64.
        data: String,
        /// Its MIME type (`audio/wav`).
        mime_type: String,
    },
    /// A resource embedded in the output.
    Resource {
        /// The resource.
        resource: EmbeddedResource,
    },
}

/// A resource inside [`ContentBlock::Resource`]: text or a base64 blob.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text, for a text resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its bytes, base64, for a binary resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl Content {
    /// No blocks yet.
    pub fn new() -> Self {
        Content::default()
    }

    /// Content starting with a text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::new().and_text(text)
    }

    /// This content plus a text block.
    #[must_use]
    pub fn and_text(self, text: impl Into<String>) -> Self {
        self.push(ContentBlock::Text { text: text.into() })
    }

    /// This content plus an image (`data` base64).
    #[must_use]
    pub fn image(self, data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        self.push(ContentBlock::Image {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }

    /// This content plus audio (`data` base64).
    #[must_use]
    pub fn audio(self, data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        self.push(ContentBlock::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }

    /// This content plus an embedded text resource.
    #[must_use]
    pub fn resource_text(
        self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        self.push(ContentBlock::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: Some(text.into()),
                blob: None,
            },
        })
    }

    /// This content plus an embedded binary resource (`blob` base64).
    #[must_use]
    pub fn resource_blob(
        self,
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        blob: impl Into<String>,
    ) -> Self {
        self.push(ContentBlock::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: None,
                blob: Some(blob.into()),
            },
        })
    }

    /// This content plus `block`.
    #[must_use]
    pub fn push(mut self, block: ContentBlock) -> Self {
        self.content.push(block);
        self
    }

    /// The content a tool output holds: an object whose only key is `content`,
    /// a list of blocks.
    pub fn from_output(output: &serde_json::Value) -> Option<Content> {
        let obj = output.as_object()?;
        if obj.len() != 1 || !obj.get("content")?.is_array() {
            return None;
        }
        serde_json::from_value(output.clone()).ok()
    }
}
