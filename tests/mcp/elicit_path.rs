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
