//! Rich tool output: [`Content`], a list of content blocks (text, image, audio,
//! embedded resource, link to a resource) in the shape MCP clients render.

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
    /// A link to a resource the client may read (MCP's `resource_link`), instead
    /// of its content.
    #[serde(rename = "resource_link")]
    ResourceLink(ResourceLink),
}

/// A link inside [`ContentBlock::ResourceLink`]: where the resource is and what
/// it is called.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name (an identifier a client may show).
    pub name: String,
    /// A human title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl ResourceLink {
    /// A link to `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }

    /// With a human title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// With a description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With a MIME type.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// With a size in bytes.
    #[must_use]
    pub fn size(mut self, bytes: u64) -> Self {
        self.size = Some(bytes);
        self
    }
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

    /// This content plus a link to a resource (MCP's `resource_link` block).
    ///
    /// ```
    /// use toolmark::{Content, ResourceLink};
    ///
    /// let out = Content::text("The report is ready.").resource_link(
    ///     ResourceLink::new("file:///reports/q3.pdf", "q3.pdf").mime_type("application/pdf"),
    /// );
    /// assert_eq!(
    ///     serde_json::to_value(&out).unwrap()["content"][1],
    ///     serde_json::json!({"type": "resource_link", "uri": "file:///reports/q3.pdf",
    ///                        "name": "q3.pdf", "mimeType": "application/pdf"})
    /// );
    /// ```
    #[must_use]
    pub fn resource_link(self, link: ResourceLink) -> Self {
        self.push(ContentBlock::ResourceLink(link))
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
