//! Confirmation by elicitation is a confirmation path of its own: an app with
//! `confirm_by_elicitation` and no confirm handler lists and runs its guarded
//! tools for a client that answers elicitations, and only for such a client
//! (one without the capability has no path: the tools stay hidden and a call is
//! `not_allowed`), so the list and a call always agree.

use rmcp::model::ElicitationAction;
use toolmark::mcp::{Elicitation, McpServer};
use toolmark::Toolmark;

use crate::*;

/// The test app with no confirm handler of its own.
fn handlerless(log: &Log) -> Toolmark {
    app(Toolmark::builder(), log)
}

fn names(tools: &[rmcp::model::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn an_eliciting_client_sees_and_runs_guarded_tools_without_an_app_handler() {
    let log = Log::default();
    let server = McpServer::new(handlerless(&log))
        .confirm_by_elicitation(Elicitation::consequential().destructive());
    let asking = Client {
        elicit: Some(ElicitationAction::Accept),
        ..Client::default()
    };
    let client = connect(&server, asking.clone()).await;
    let listed = names(&client.list_all_tools().await.unwrap());
    assert!(listed.contains(&"pay.send".to_owned()), "{listed:?}");
    assert!(listed.contains(&"notes.purge".to_owned()), "{listed:?}");
    let r = pay(&client, "ada", 5, SECRET).await;
    assert_eq!(r.structured_content, Some(json!({"paid": 5})), "{r:?}");
    let asked = asking.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(!asked[0].contains(SECRET), "{asked:?}");
    let r = client
        .call_tool(call("notes.purge", json!({})))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"deleted": 3})), "{r:?}");
    assert_eq!(log.get(), ["paid 5 to ada", "purged"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_client_without_elicitation_has_no_path_list_and_call_agree() {
    let log = Log::default();
    let server = McpServer::new(handlerless(&log))
        .confirm_by_elicitation(Elicitation::consequential().destructive());
    let client = connect(&server, Client::default()).await;
    let listed = names(&client.list_all_tools().await.unwrap());
    assert!(!listed.contains(&"pay.send".to_owned()), "{listed:?}");
    assert!(!listed.contains(&"notes.purge".to_owned()), "{listed:?}");
    assert!(listed.contains(&"notes.count".to_owned()), "{listed:?}");
    let r = pay(&client, "ada", 5, SECRET).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        r.content[0]
            .as_text()
            .unwrap()
            .text
            .starts_with("not_allowed: "),
        "{r:?}"
    );
    assert!(log.get().is_empty());
    client.cancel().await.unwrap();
}

/// What the policy does not cover has no path even for an eliciting client.
#[tokio::test]
async fn the_policy_decides_which_guarded_tools_an_eliciting_client_gets() {
    let log = Log::default();
    let server =
        McpServer::new(handlerless(&log)).confirm_by_elicitation(Elicitation::consequential());
    let client = connect(
        &server,
        Client {
            elicit: Some(ElicitationAction::Accept),
            ..Client::default()
        },
    )
    .await;
    let listed = names(&client.list_all_tools().await.unwrap());
    assert!(listed.contains(&"pay.send".to_owned()), "{listed:?}");
    assert!(!listed.contains(&"notes.purge".to_owned()), "{listed:?}");
    let r = client
        .call_tool(call("notes.purge", json!({})))
        .await
        .unwrap();
    assert!(
        r.content[0]
            .as_text()
            .unwrap()
            .text
            .starts_with("not_allowed: "),
        "{r:?}"
    );
    assert!(log.get().is_empty());
    client.cancel().await.unwrap();
}

/// The two lists are what the session's own `tools_for` says.
#[tokio::test]
async fn the_session_lists_per_client() {
    let server = McpServer::new(handlerless(&Log::default()))
        .confirm_by_elicitation(Elicitation::consequential());
    let s = server.session();
    let plain = names(&s.tools_for(false));
    let asking = names(&s.tools_for(true));
    assert_eq!(asking.len(), plain.len() + 1);
    assert!(asking.contains(&"pay.send".to_owned()));
    // Without elicitation configured, both lists are the same.
    let s = McpServer::new(handlerless(&Log::default())).session();
    assert_eq!(names(&s.tools_for(true)), names(&s.tools_for(false)));
}

/// A guarded tool only MCP may call: without an app handler its registration
/// fails unless the builder declares that MCP clients confirm; with that, the
/// registration, the list and a call agree for each kind of client.
#[tokio::test]
async fn registration_counts_the_clients_path_when_declared() {
    use toolmark::{Caller, Effect, RegisterError, ToolSpec};
    let spec = |log: &Log| {
        let l = log.clone();
        ToolSpec::new("send", "Send the newsletter")
            .effect(Effect::Consequential)
            .callers([Caller::Mcp])
            .handler(move |_ctx, _input| {
                let l = l.clone();
                async move {
                    l.push("sent");
                    Ok(json!({"sent": true}))
                }
            })
    };
    let log = Log::default();
    let plain = Toolmark::builder().build().unwrap();
    let err = plain.register(spec(&log), Default::default()).unwrap_err();
    assert!(matches!(err, RegisterError::MissingConfirmHandler { .. }));
    assert!(
        err.to_string().contains("client_confirms(Caller::Mcp)"),
        "{err}"
    );

    let tm = Toolmark::builder()
        .client_confirms(Caller::Mcp)
        .build()
        .unwrap();
    tm.register(spec(&log), Default::default()).unwrap();
    let server = McpServer::new(tm).confirm_by_elicitation(Elicitation::consequential());
    let asking = connect(
        &server,
        Client {
            elicit: Some(ElicitationAction::Accept),
            ..Client::default()
        },
    )
    .await;
    assert_eq!(names(&asking.list_all_tools().await.unwrap()), ["send"]);
    let r = asking.call_tool(call("send", json!({}))).await.unwrap();
    assert_eq!(r.structured_content, Some(json!({"sent": true})), "{r:?}");
    let other = connect(&server, Client::default()).await;
    assert!(other.list_all_tools().await.unwrap().is_empty());
    let r = other.call_tool(call("send", json!({}))).await.unwrap();
    assert!(
        r.content[0]
            .as_text()
            .unwrap()
            .text
            .starts_with("not_allowed: "),
        "{r:?}"
    );
    assert_eq!(log.get(), ["sent"]);
    asking.cancel().await.unwrap();
    other.cancel().await.unwrap();
}

/// For every tool, every kind of client and every elicitation policy: a tool is
/// listed exactly when a call of it is not refused `not_allowed`. The app has no
/// confirm handler; MCP-only guarded tools registered because the builder
/// declared that MCP clients confirm, and one of them (destructive) is outside
/// the narrower policy, so no client has a path to it there.
#[tokio::test]
async fn list_and_call_agree_for_every_tool_client_and_policy() {
    use toolmark::{Caller, ToolSpec};
    let log = Log::default();
    let mcp_only = |name: &'static str, effect: Effect| {
        let l = log.clone();
        ToolSpec::new(name, "An MCP-only guarded tool")
            .effect(effect)
            .callers([Caller::Mcp])
            .handler(move |_ctx, _input| {
                let l = l.clone();
                async move {
                    l.push(name);
                    Ok(json!({"done": name}))
                }
            })
    };
    let inputs = [
        ("extra.ping", json!({})),
        ("mcp_only.send", json!({})),
        ("mcp_only.wipe", json!({})),
        ("notes.add", json!({"text": "milk"})),
        ("notes.count", json!({})),
        ("notes.purge", json!({})),
        (
            "pay.send",
            json!({"to": "ada", "amount": 5, "card": SECRET}),
        ),
        ("slow.wait", json!({"steps": 1})),
    ];
    let guarded = ["mcp_only.send", "mcp_only.wipe", "notes.purge", "pay.send"];
    for (policy, covered) in [
        (Elicitation::consequential().destructive(), &guarded[..]),
        (
            Elicitation::consequential(),
            &["mcp_only.send", "pay.send"][..],
        ),
    ] {
        let tm = app(
            Toolmark::builder().client_confirms(Caller::Mcp),
            &Log::default(),
        );
        let scope = tm.scope("mcp_only");
        scope
            .register(mcp_only("send", Effect::Consequential))
            .unwrap();
        scope
            .register(mcp_only("wipe", Effect::Destructive))
            .unwrap();
        let server = McpServer::new(tm).confirm_by_elicitation(policy.clone());
        for elicits in [true, false] {
            let client = Client {
                elicit: elicits.then_some(ElicitationAction::Accept),
                ..Client::default()
            };
            let client = connect(&server, client).await;
            let listed = names(&client.list_all_tools().await.unwrap());
            // What the server's list must be: every unguarded tool, and the
            // guarded ones the policy covers for a client that answers.
            let expected: Vec<&str> = inputs
                .iter()
                .map(|(n, _)| *n)
                .filter(|n| !guarded.contains(n) || (elicits && covered.contains(n)))
                .collect();
            assert_eq!(listed, expected, "{policy:?}, elicits: {elicits}");
            for (name, input) in &inputs {
                let r = client.call_tool(call(name, input.clone())).await.unwrap();
                let refused = r.is_error == Some(true)
                    && r.content[0]
                        .as_text()
                        .is_some_and(|t| t.text.starts_with("not_allowed: "));
                assert_eq!(
                    listed.iter().any(|l| l == name),
                    !refused,
                    "{name} ({policy:?}, elicits: {elicits}): {r:?}"
                );
                if !refused {
                    assert_ne!(r.is_error, Some(true), "{name}: {r:?}");
                }
            }
            client.cancel().await.unwrap();
        }
    }
}
