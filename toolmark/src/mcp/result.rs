//! The one place an [`Outcome`] becomes an MCP tools/call result.

use std::fmt::Write;

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{json, Value};

use crate::{Issue, Outcome};

/// The `_meta` key of an error result's `{code, message, issues}`.
pub const ERROR_META_KEY: &str = "toolmark/error";

/// What a tool declares of its output, which decides the shape of its results
/// (see [`call_result`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputShape {
    /// No output schema: an object output is `structuredContent` as it is, any
    /// other value is wrapped as `{"result": …}`.
    #[default]
    Undeclared,
    /// An object output schema: the output is `structuredContent` as it is.
    Object,
    /// A non-object output schema, listed wrapped as `{"result": …}`: every
    /// output is wrapped the same way.
    Wrapped,
}

impl OutputShape {
    /// Whether the tool lists an `outputSchema` (which clients validate
    /// `structuredContent` against, error results included).
    pub const fn declared(self) -> bool {
        !matches!(self, OutputShape::Undeclared)
    }
}

/// The MCP result of a call's [`Outcome`] (an unknown tool is answered before
/// this, as the JSON-RPC error `-32602`), for a tool whose output is `shape`.
///
/// - `ok` with a [`Content`](crate::Content) output: its blocks are the
///   result's `content`, with no `structuredContent`.
/// - `ok`: `structuredContent` is the output when it is an object and the
///   shape is not [`OutputShape::Wrapped`], else `{"result": output}`; one text
///   content holds the same JSON.
/// - `refused`, `error` (and `needs_confirmation`, which an MCP caller does not
///   get): `isError: true` and a text a model can act on: `"<code>: <message>"`
///   and one line per issue, `"- <path>: <message>"` (`code` is the refusal
///   code, `tool_error` for a tool's own error). The same `{code, message,
///   issues}` is in `_meta` under [`ERROR_META_KEY`] for programs, and is the
///   `structuredContent` only when the tool declares no output schema: clients
///   (the TypeScript SDK, the MCP Inspector) validate `structuredContent`
///   against a declared schema even on an error result, and would throw away
///   the message.
///
/// ```
/// use serde_json::json;
/// use toolmark::mcp::{call_result, OutputShape, ERROR_META_KEY};
/// use toolmark::{Outcome, RefusalCode};
///
/// let ok = call_result(Outcome::Ok { output: json!(5) }, OutputShape::Wrapped);
/// assert_eq!(ok.structured_content, Some(json!({"result": 5})));
/// let busy = Outcome::refused(RefusalCode::Busy, "Try later");
/// let refused = call_result(busy, OutputShape::Wrapped);
/// assert_eq!(refused.is_error, Some(true));
/// assert_eq!(refused.structured_content, None);
/// assert_eq!(refused.meta.unwrap().0[ERROR_META_KEY]["code"], "busy");
/// ```
pub fn call_result(outcome: Outcome, shape: OutputShape) -> CallToolResult {
    match outcome {
        Outcome::Ok { output } => {
            if let Some(blocks) = rich(&output) {
                return CallToolResult::success(blocks);
            }
            let structured = if output.is_object() && shape != OutputShape::Wrapped {
                output
            } else {
                json!({ "result": output })
            };
            CallToolResult::structured(structured)
        }
        Outcome::Refused(r) => failure(r.code.as_str(), &r.message, &r.issues, shape),
        Outcome::Error(e) => failure("tool_error", &e.message, &e.issues, shape),
        Outcome::NeedsConfirmation { summary, .. } => failure(
            "needs_confirmation",
            &format!("The call waits for the user's confirmation: {summary}"),
            &[],
            shape,
        ),
    }
}

/// The blocks of a [`Content`](crate::Content) output, as rmcp's content.
fn rich(output: &Value) -> Option<Vec<ContentBlock>> {
    let content = crate::Content::from_output(output)?;
    serde_json::to_value(content.content)
        .and_then(serde_json::from_value)
        .ok()
}

fn failure(code: &str, message: &str, issues: &[Issue], shape: OutputShape) -> CallToolResult {
    let mut text = format!("{code}: {message}");
    for issue in issues {
        let path = if issue.path.is_empty() {
            "(input)"
        } else {
            &issue.path
        };
        let _ = write!(text, "\n- {path}: {}", issue.message);
    }
    let issues: Vec<Value> = issues
        .iter()
        .map(|i| json!({"path": i.path, "message": i.message}))
        .collect();
    let error = json!({"code": code, "message": message, "issues": issues});
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    if !shape.declared() {
        result.structured_content = Some(error.clone());
    }
    let mut meta = MetaObject::default();
    meta.0.insert(ERROR_META_KEY.to_owned(), error);
    result.meta = Some(meta);
    result
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::{RefusalCode, ToolError};

    fn wire(r: &CallToolResult) -> Value {
        serde_json::to_value(r).unwrap()
    }

    /// Every status and every refusal code, with the exact result a client gets.
    #[test]
    fn golden_table_of_every_status_and_code() {
        let issue = Issue::new("card.number", "expected a string");
        let mut rows: Vec<(Outcome, OutputShape, Value)> = vec![
            (
                Outcome::Ok {
                    output: json!({"id": 7}),
                },
                OutputShape::Undeclared,
                json!({"content": [{"type": "text", "text": "{\"id\":7}"}],
                       "structuredContent": {"id": 7}, "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: json!({"id": 7}),
                },
                OutputShape::Wrapped,
                json!({"content": [{"type": "text", "text": "{\"result\":{\"id\":7}}"}],
                       "structuredContent": {"result": {"id": 7}}, "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: json!("hi"),
                },
                OutputShape::Undeclared,
                json!({"content": [{"type": "text", "text": "{\"result\":\"hi\"}"}],
                       "structuredContent": {"result": "hi"}, "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: serde_json::to_value(
                        crate::Content::text("hi")
                            .image("AA==", "image/png")
                            .audio("BB==", "audio/wav")
                            .resource_text("test://r", "text/plain", "body")
                            .resource_link(
                                crate::ResourceLink::new("file:///q3.pdf", "q3.pdf")
                                    .title("Q3 report")
                                    .mime_type("application/pdf")
                                    .size(1024),
                            ),
                    )
                    .unwrap(),
                },
                OutputShape::Wrapped,
                json!({"content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image", "data": "AA==", "mimeType": "image/png"},
                    {"type": "audio", "data": "BB==", "mimeType": "audio/wav"},
                    {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "body"}},
                    {"type": "resource_link", "uri": "file:///q3.pdf", "name": "q3.pdf",
                     "title": "Q3 report", "mimeType": "application/pdf", "size": 1024}
                ], "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: json!({"content": "not blocks"}),
                },
                OutputShape::Undeclared,
                json!({"content": [{"type": "text", "text": "{\"content\":\"not blocks\"}"}],
                       "structuredContent": {"content": "not blocks"}, "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: Value::Null,
                },
                OutputShape::Undeclared,
                json!({"content": [{"type": "text", "text": "{\"result\":null}"}],
                       "structuredContent": {"result": null}, "isError": false}),
            ),
            (
                Outcome::Error(ToolError::new("disk full").with_issues(vec![issue.clone()])),
                OutputShape::Undeclared,
                json!({"content": [{"type": "text", "text": "tool_error: disk full\n- card.number: expected a string"}],
                       "structuredContent": {"code": "tool_error", "message": "disk full",
                           "issues": [{"path": "card.number", "message": "expected a string"}]},
                       "isError": true}),
            ),
            (
                Outcome::NeedsConfirmation {
                    confirm_id: "ab".into(),
                    summary: "Send it".into(),
                    changes: vec![],
                    expires_at: SystemTime::UNIX_EPOCH,
                },
                OutputShape::Undeclared,
                json!({"content": [{"type": "text", "text": "needs_confirmation: The call waits for the user's confirmation: Send it"}],
                       "structuredContent": {"code": "needs_confirmation",
                           "message": "The call waits for the user's confirmation: Send it", "issues": []},
                       "isError": true}),
            ),
        ];
        let codes = [
            RefusalCode::UnknownTool,
            RefusalCode::NotAllowed,
            RefusalCode::Invalid,
            RefusalCode::Rejected,
            RefusalCode::ConfirmationExpired,
            RefusalCode::Stale,
            RefusalCode::Cancelled,
            RefusalCode::ScopeDisposed,
            RefusalCode::Busy,
        ];
        for code in codes {
            let c = code.as_str();
            rows.push((
                Outcome::refused(code, "why"),
                OutputShape::Undeclared,
                json!({"content": [{"type": "text", "text": format!("{c}: why")}],
                       "structuredContent": {"code": c, "message": "why", "issues": []},
                       "isError": true}),
            ));
        }
        let invalid = crate::Refusal::invalid(vec![
            Issue::new("", "the input must be a JSON object, not an array"),
            issue,
        ]);
        rows.push((
            Outcome::Refused(invalid),
            OutputShape::Undeclared,
            json!({"content": [{"type": "text", "text": "invalid: Invalid input: the input must be a JSON object, not an array (and 1 more)\n- (input): the input must be a JSON object, not an array\n- card.number: expected a string"}],
                   "structuredContent": {"code": "invalid",
                       "message": "Invalid input: the input must be a JSON object, not an array (and 1 more)",
                       "issues": [{"path": "", "message": "the input must be a JSON object, not an array"},
                                  {"path": "card.number", "message": "expected a string"}]},
                   "isError": true}),
        ));
        let wire_of = |outcome: Outcome, shape| {
            // `resultType` is protocol-version dependent and cleared by rmcp for
            // the revisions this server speaks; the table checks the rest.
            let mut got = wire(&call_result(outcome, shape));
            got.as_object_mut().unwrap().remove("resultType");
            got
        };
        for (outcome, shape, mut want) in rows {
            let label = format!("{outcome:?}");
            if want["isError"] == true {
                // The same `{code, message, issues}` in `_meta`, always.
                let error = want["structuredContent"].clone();
                want["_meta"] = json!({ ERROR_META_KEY: error });
                assert_eq!(wire_of(outcome.clone(), shape), want, "{label}");
                // A tool with an output schema: no `structuredContent` to break it.
                want.as_object_mut().unwrap().remove("structuredContent");
                for declared in [OutputShape::Object, OutputShape::Wrapped] {
                    assert_eq!(wire_of(outcome.clone(), declared), want, "{label}");
                }
            } else {
                assert_eq!(wire_of(outcome, shape), want, "{label}");
            }
        }
    }
}
