//! The one place an [`Outcome`] becomes a WebMCP tool result.

use std::fmt::Write;

use serde_json::{json, Value};

use crate::{Issue, Outcome};

/// The WebMCP result (what the page's `execute` resolves to) of a call's
/// [`Outcome`]: the shape MCP tool results have, which browser agents read.
///
/// - `ok` with a [`Content`](crate::Content) output: its blocks are `content`.
/// - `ok`: `structuredContent` is the output when it is an object, else
///   `{"result": output}`; one text block holds the same JSON.
/// - `refused`, `error` (and `needs_confirmation`, which a WebMCP caller does not
///   get: its confirmations are inline): `isError: true`, `structuredContent`
///   `{code, message, issues}` (`code` is the refusal code, `tool_error` for a
///   tool's own error), and a text a model can act on: `"<code>: <message>"` and
///   one line per issue, `"- <path>: <message>"`.
///
/// The outcome is already what Toolmark gives every caller (sensitive values
/// scrubbed from outputs, errors and issues); this only translates it.
///
/// ```
/// use serde_json::json;
/// use toolmark::webmcp::tool_result;
/// use toolmark::{Outcome, RefusalCode};
///
/// let ok = tool_result(Outcome::Ok { output: json!({"n": 5}) });
/// assert_eq!(ok["structuredContent"], json!({"n": 5}));
/// let refused = tool_result(Outcome::refused(RefusalCode::Busy, "Try later"));
/// assert_eq!(refused["isError"], json!(true));
/// assert_eq!(refused["structuredContent"]["code"], json!("busy"));
/// ```
pub fn tool_result(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Ok { output } => {
            if let Some(content) = crate::Content::from_output(&output)
                && let Ok(blocks) = serde_json::to_value(content.content)
            {
                return json!({ "content": blocks, "isError": false });
            }
            let structured = if output.is_object() {
                output
            } else {
                json!({ "result": output })
            };
            let text = structured.to_string();
            json!({
                "content": [{"type": "text", "text": text}],
                "structuredContent": structured,
                "isError": false,
            })
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

/// A failure result with `code` (also used by the endpoints for a call that
/// never reached the toolmark, e.g. an unknown tool name).
pub(crate) fn failure(code: &str, message: &str, issues: &[Issue]) -> Value {
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
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"code": code, "message": message, "issues": issues},
        "isError": true,
    })
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::{RefusalCode, ToolError};

    /// Every status and every refusal code, with the exact result a page gets.
    #[test]
    fn golden_table_of_every_status_and_code() {
        let issue = Issue::new("card.number", "expected a string");
        let mut rows: Vec<(Outcome, Value)> = vec![
            (
                Outcome::Ok {
                    output: json!({"id": 7}),
                },
                json!({"content": [{"type": "text", "text": "{\"id\":7}"}],
                       "structuredContent": {"id": 7}, "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: json!("hi"),
                },
                json!({"content": [{"type": "text", "text": "{\"result\":\"hi\"}"}],
                       "structuredContent": {"result": "hi"}, "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: Value::Null,
                },
                json!({"content": [{"type": "text", "text": "{\"result\":null}"}],
                       "structuredContent": {"result": null}, "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: serde_json::to_value(
                        crate::Content::text("hi").image("AA==", "image/png"),
                    )
                    .unwrap(),
                },
                json!({"content": [
                    {"type": "text", "text": "hi"},
                    {"type": "image", "data": "AA==", "mimeType": "image/png"}
                ], "isError": false}),
            ),
            (
                Outcome::Ok {
                    output: json!({"content": "not blocks"}),
                },
                json!({"content": [{"type": "text", "text": "{\"content\":\"not blocks\"}"}],
                       "structuredContent": {"content": "not blocks"}, "isError": false}),
            ),
            (
                Outcome::Error(ToolError::new("disk full").with_issues(vec![issue.clone()])),
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
                json!({"content": [{"type": "text", "text": format!("{c}: why")}],
                       "structuredContent": {"code": c, "message": "why", "issues": []},
                       "isError": true}),
            ));
        }
        let invalid = crate::Refusal::invalid(vec![Issue::new("", "not an object"), issue]);
        rows.push((
            Outcome::Refused(invalid),
            json!({"content": [{"type": "text", "text": "invalid: Invalid input: not an object (and 1 more)\n- (input): not an object\n- card.number: expected a string"}],
                   "structuredContent": {"code": "invalid",
                       "message": "Invalid input: not an object (and 1 more)",
                       "issues": [{"path": "", "message": "not an object"},
                                  {"path": "card.number", "message": "expected a string"}]},
                   "isError": true}),
        ));
        for (outcome, want) in rows {
            let label = format!("{outcome:?}");
            assert_eq!(tool_result(outcome), want, "{label}");
        }
    }
}
