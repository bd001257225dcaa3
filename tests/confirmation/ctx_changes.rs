//! What an approver sees of `ctx.confirm`'s changes and summary: sensitive paths
//! matched in both path forms, and the run's secrets scrubbed from every string.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolmark::{Ask, Caller, Change, ConfirmRequest, Decision, ToolSpec, Toolmark};

use crate::*;

const SECRET: &str = "cvc-Q7w3";

/// A tool with a sensitive `cards[].cvc` that asks with `changes` built from its
/// input and returns what came back.
fn asking(changes: fn(&str) -> Vec<Change>) -> ToolSpec {
    ToolSpec::new("wallet", "Update a wallet")
        .input_schema(json!({
            "type": "object",
            "properties": {"cards": {"type": "array", "items": {
                "type": "object",
                "properties": {"number": {"type": "string"}, "cvc": {"type": "string"}}
            }}}
        }))
        .sensitive(["cards[].cvc"])
        .handler(move |ctx, input| async move {
            let cvc = input["cards"][0]["cvc"].as_str().unwrap().to_owned();
            let r = ctx
                .confirm(Ask {
                    summary: format!("Replace the card (cvc {cvc})"),
                    changes: changes(&cvc),
                })
                .await;
            // The output is scrubbed of the run's secrets on its way out: compare here.
            let after = |i: usize| r.changes.get(i).and_then(|c| c.after.clone());
            Ok(json!({
                "approved": r.approved,
                "reason": r.reason,
                "paths": r.changes.iter().map(|c| c.path.clone()).collect::<Vec<_>>(),
                "first_is_the_secret": after(0) == Some(json!(cvc)),
                "note_is_the_original": after(1) == Some(json!(format!("new card, cvc {cvc}"))),
            }))
        })
}

fn input() -> Value {
    json!({"cards": [{"number": "4242", "cvc": SECRET}]})
}

/// An inline toolmark whose handler records each request and answers `answer`.
fn recording(
    answer: fn(&ConfirmRequest) -> Decision,
) -> (Toolmark, Arc<Mutex<Vec<ConfirmRequest>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let tm = Toolmark::builder()
        .confirm_handler(move |req: ConfirmRequest| {
            let decision = answer(&req);
            log.lock().unwrap().push(req);
            async move { decision }
        })
        .build()
        .unwrap();
    (tm, seen)
}

fn pointer_and_note(cvc: &str) -> Vec<Change> {
    vec![
        Change::new("/cards/0/cvc", None, Some(json!(cvc))),
        Change::new("note", None, Some(json!(format!("new card, cvc {cvc}")))),
        Change::new("/a~1b/c~0d", Some(json!("x")), Some(json!("y"))),
    ]
}

#[tokio::test]
async fn a_json_pointer_change_path_is_redacted_like_the_dotted_one() {
    let (tm, seen) = recording(|_| Decision::approve());
    tm.register(asking(pointer_and_note), Default::default())
        .unwrap();
    let out = tm.call("wallet", input(), opts(Caller::Mcp)).await;
    assert_eq!(out.output().unwrap()["approved"], json!(true), "{out:?}");
    let req = seen.lock().unwrap()[0].clone();
    assert_eq!(req.changes[0].path, "cards.0.cvc", "shown dotted");
    assert_eq!(req.changes[0].after, Some(json!("[redacted]")));
    assert_eq!(req.changes[2].path, "a/b.c~d", "pointer escapes are read");
    let text = serde_json::to_string(&req).unwrap();
    assert!(!text.contains(SECRET), "{text}");
    // The tool gets its own values back (in the dotted form).
    let output = out.output().unwrap();
    assert_eq!(output["paths"][0], json!("cards.0.cvc"));
    assert_eq!(output["first_is_the_secret"], json!(true));
}

#[tokio::test]
async fn change_values_and_the_summary_are_scrubbed_of_the_runs_secrets() {
    let (tm, seen) = recording(|_| Decision::approve());
    tm.register(asking(pointer_and_note), Default::default())
        .unwrap();
    tm.call("wallet", input(), opts(Caller::Mcp)).await;
    let req = seen.lock().unwrap()[0].clone();
    assert_eq!(
        req.changes[1].after,
        Some(json!("new card, cvc [redacted]"))
    );
    assert_eq!(req.summary, "Replace the card (cvc [redacted])");
    assert!(!format!("{req:?}").contains(SECRET));
}

#[tokio::test]
async fn a_scrubbed_change_sent_back_unchanged_approves_the_original() {
    let (tm, _) = recording(|req| {
        let shown = serde_json::to_value(&req.changes).unwrap();
        Decision {
            approved: true,
            input: Some(shown),
            reason: None,
        }
    });
    tm.register(asking(pointer_and_note), Default::default())
        .unwrap();
    let out = tm.call("wallet", input(), opts(Caller::Mcp)).await;
    let output = out.output().unwrap();
    assert_eq!(output["approved"], json!(true), "{out:?}");
    assert_eq!(output["first_is_the_secret"], json!(true), "restored");
    assert_eq!(
        output["note_is_the_original"],
        json!(true),
        "the original, not the scrubbed text"
    );
}
