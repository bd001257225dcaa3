//! The one place an [`Outcome`] becomes an MCP tools/call result.

use std::fmt::Write;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

use crate::{Issue, Outcome};

/// The MCP result of a call's [`Outcome`] (an unknown tool is answered before
/// this, as the JSON-RPC error `-32602`).
///
/// - `ok` with a [`Content`](crate::Content) output: its blocks are the
///   result's `content`, with no `structuredContent`.
/// - `ok`: `structuredContent` is the output when it is an object and
///   `wrap_output` is false, else `{"result": output}` (`wrap_output` is true when
///   the tool's output schema was wrapped the same way); one text content holds
///   the same JSON.
/// - `refused`, `error` (and `needs_confirmation`, which an MCP caller does not
///   get): `isError: true`, `structuredContent` `{code, message, issues}` (`code`
///   is the refusal code, `tool_error` for a tool's own error), and a text a
///   model can act on: `"<code>: <message>"` and one line per issue,
///   `"- <path>: <message>"`.
///
/// ```
/// use serde_json::json;
/// use toolmark::mcp::call_result;
/// use toolmark::{Outcome, RefusalCode};
///
/// let ok = call_result(Outcome::Ok { output: json!(5) }, false);
/// assert_eq!(ok.structured_content, Some(json!({"result": 5})));
/// let refused = call_result(Outcome::refused(RefusalCode::Busy, "Try later"), false);
/// assert_eq!(refused.is_error, Some(true));
/// ```
pub fn call_result(outcome: Outcome, wrap_output: bool) -> CallToolResult {
    match outcome {
        Outcome::Ok { output } => {
            if let Some(blocks) = rich(&output) {
                return CallToolResult::success(blocks);
            }
            let structured = if output.is_object() && !wrap_output {
                output
            } else {
                json!({ "result": output })
            };
            CallToolResult::structured(structured)
        }
        Outcome::Refused(r) => failure(r.code.as_str(), &r.message, &r.issues),
        Outcome::Error(e) => failure("tool_error", &e.message, &e.issues),
        Outcome::NeedsConfirmation { summary, .. } => failure(
            "needs_confirmation",
            &format!("The call waits for the user's confirmation: {summary}"),
            &[],
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

fn failure(code: &str, message: &str, issues: &[Issue]) -> CallToolResult {
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
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({"code": code, "message": message, "issues": issues}));
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
        let mut rows: Vec<(Outcome, bool, Value)> = vec![
            (
                Outcome::Ok {
                    output: json!({"id": 7}),
                },
                false,
                json!({"content": [{"type": "text", "text": "{\"id\":7}"}],
                       "structuredContent": {"id": 7}, "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: json!({"id": 7}),
                },
                true,
                json!({"content": [{"type": "text", "text": "{\"result\":{\"id\":7}}"}],
                       "structuredContent": {"result": {"id": 7}}, "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: json!("hi"),
                },
                false,
                json!({"content": [{"type": "text", "text": "{\"result\":\"hi\"}"}],
                       "structuredContent": {"result": "hi"}, "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: serde_json::to_value(
                        crate::Content::text("hi")
                            .image("AA==", "image/png")
                            .audio("BB==", "audio/wav")
                            .resource_text("test://r", "text/plain", "body"),
                    )
                    .unwrap(),
                },
                true,
                json!({"content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image", "data": "AA==", "mimeType": "image/png"},
                    {"type": "audio", "data": "BB==", "mimeType": "audio/wav"},
                    {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "body"}}
                ], "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: json!({"content": "not blocks"}),
                },
                false,
                json!({"content": [{"type": "text", "text": "{\"content\":\"not blocks\"}"}],
                       "structuredContent": {"content": "not blocks"}, "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: Value::Null,
                },
                false,
                json!({"content": [{"type": "text", "text": "{\"result\":null}"}],
                       "structuredContent": {"result": null}, "isError": false}),
            ),
            (
                Outcome::Error(ToolError::new("disk full").with_issues(vec![issue.clone()])),
                false,
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
                false,
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
                false,
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
            false,
            json!({"content": [{"type": "text", "text": "invalid: Invalid input: the input must be a JSON object, not an array (and 1 more)\n- (input): the input must be a JSON object, not an array\n- card.number: expected a string"}],
                   "structuredContent": {"code": "invalid",
                       "message": "Invalid input: the input must be a JSON object, not an array (and 1 more)",
                       "issues": [{"path": "", "message": "the input must be a JSON object, not an array"},
                                  {"path": "card.number", "message": "expected a string"}]},
                   "isError": true}),
        ));
        for (outcome, wrap, want) in rows {
            let label = format!("{outcome:?}");
            let got = wire(&call_result(outcome, wrap));
            // `resultType` is protocol-version dependent and cleared by rmcp for
            // the revisions this server speaks; the table checks the rest.
            let mut got = got;
            got.as_object_mut().unwrap().remove("resultType");
            assert_eq!(got, want, "{label}");
        }
    }
}
