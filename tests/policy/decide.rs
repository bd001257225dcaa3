//! Who may make a lasting decision: only the app's handlers and approvers. A
//! call's own confirm handler (an MCP client's elicitation answer) decides that
//! call alone — or that client's session, when the app opts in. A remembered
//! approval covers a tool only while its effect and sensitive paths are what the
//! approver saw; policy rules by scope match scope membership, transparent
//! scopes included.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use serde_json::json;
use toolmark::{Approver, Caller, Decision, Effect, For, Policy, Rule, ScopeOptions, Toolmark};

use crate::*;

on_every_store!(
    a_calls_own_handler_never_makes_a_lasting_approval,
    a_calls_own_handler_never_makes_a_lasting_rejection,
    a_client_session_decision_is_kept_only_when_the_app_opts_in_and_only_for_that_session,
    the_apps_handler_still_makes_lasting_decisions,
    a_remembered_approval_stops_covering_a_tool_that_gained_sensitive_paths,
    a_remembered_rejection_still_covers_a_tool_that_gained_sensitive_paths,
);

/// A toolmark on `s` whose own (app) handler approves without remembering and
/// counts how often it was asked.
async fn app_asks(
    s: Store,
    builder: toolmark::ToolmarkBuilder,
) -> Option<(Toolmark, Arc<AtomicUsize>, Asker)> {
    let app = Asker::new();
    let (tm, r) = with_tools_on(
        s,
        builder.confirm_handler(app.handler(|| Decision::approve().by("user-1"))),
    )
    .await?;
    Some((tm, r, app))
}

fn client_call(
    client: &Asker,
    answer: impl Fn() -> toolmark::Answer + Send + Sync + 'static,
) -> toolmark::CallOptions {
    opts(Caller::Mcp).confirm_handler(client.handler(answer))
}

async fn a_calls_own_handler_never_makes_a_lasting_approval(s: Store) {
    let Some((tm, r, app)) = app_asks(s, Toolmark::builder()).await else {
        return;
    };
    let client = Asker::new();
    for duration in [For::Always, For::Session] {
        let out = tm
            .call(
                "mail.send",
                json!({}),
                client_call(&client, move || Decision::approve().remember(duration))
                    .session("client-1"),
            )
            .await;
        assert!(out.is_ok(), "{out:?}");
    }
    assert_eq!(client.count(), 2, "the client answered its own calls");
    assert!(
        tm.remembered_async().await.unwrap().is_empty(),
        "nothing kept"
    );
    // Another session, and the same one through the app: asked.
    for session in ["client-2", "client-1"] {
        let out = tm
            .call("mail.send", json!({}), opts(Caller::Mcp).session(session))
            .await;
        assert!(out.is_ok(), "{out:?}");
    }
    assert_eq!(app.count(), 2, "the app's handler was asked every time");
    assert_eq!(runs(&r), 4);
}

async fn a_calls_own_handler_never_makes_a_lasting_rejection(s: Store) {
    let Some((tm, r, app)) = app_asks(s, Toolmark::builder()).await else {
        return;
    };
    let client = Asker::new();
    let out = tm
        .call(
            "files.delete",
            json!({}),
            client_call(&client, || {
                Decision::reject_with("never").remember(For::Always)
            }),
        )
        .await;
    assert_eq!(code(&out), Some(toolmark::RefusalCode::Rejected));
    assert!(tm.remembered_async().await.unwrap().is_empty());
    let out = tm.call("files.delete", json!({}), opts(Caller::Mcp)).await;
    assert!(
        out.is_ok(),
        "a client's rejection blocks no one else: {out:?}"
    );
    assert_eq!((app.count(), runs(&r)), (1, 1));
}

async fn a_client_session_decision_is_kept_only_when_the_app_opts_in_and_only_for_that_session(
    s: Store,
) {
    let Some((tm, r, app)) = app_asks(s, Toolmark::builder().client_session_decisions(true)).await
    else {
        return;
    };
    let client = Asker::new();
    // Always: still never kept. Session without a session id: not kept.
    let out = tm
        .call(
            "mail.send",
            json!({}),
            client_call(&client, || Decision::approve().remember(For::Always)).session("c1"),
        )
        .await;
    assert!(out.is_ok());
    let out = tm
        .call(
            "mail.send",
            json!({}),
            client_call(&client, || Decision::approve().remember(For::Session)),
        )
        .await;
    assert!(out.is_ok());
    assert!(tm.remembered_async().await.unwrap().is_empty());
    // Session with a session id: kept, for that session only.
    let out = tm
        .call(
            "mail.send",
            json!({}),
            client_call(&client, || Decision::approve().remember(For::Session)).session("c1"),
        )
        .await;
    assert!(out.is_ok());
    let kept = tm.remembered_async().await.unwrap();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].duration, For::Session);
    assert!(kept[0].session_bound);
    assert_eq!(
        kept[0].approver,
        Approver::Client {
            caller: Caller::Mcp
        }
    );
    let asked = app.count();
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp).session("c1"))
        .await
        .is_ok());
    assert_eq!(
        app.count(),
        asked,
        "that session: answered by the client's decision"
    );
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp).session("c2"))
        .await
        .is_ok());
    assert_eq!(app.count(), asked + 1, "another session: the app is asked");
    assert_eq!(tm.end_session("c1"), 1);
    assert_eq!(runs(&r), 5);
}

async fn the_apps_handler_still_makes_lasting_decisions(s: Store) {
    let app = Asker::new();
    let Some((tm, r)) = with_tools_on(
        s,
        Toolmark::builder().confirm_handler(
            app.handler(|| Decision::approve().by("user-1").remember(For::Always)),
        ),
    )
    .await
    else {
        return;
    };
    for session in ["a", "b"] {
        assert!(tm
            .call("mail.send", json!({}), opts(Caller::Mcp).session(session))
            .await
            .is_ok());
    }
    assert_eq!((app.count(), runs(&r)), (1, 2));
}

/// A tool `door.unlock` registered in a fresh `door` scope, with `sensitive` paths.
fn unlock(tm: &Toolmark, sensitive: &[&str], r: &Arc<AtomicUsize>) {
    tm.scope("door").dispose();
    tm.scope("door")
        .register(tool("unlock", Effect::Consequential, r).sensitive(sensitive.iter().copied()))
        .unwrap();
}

async fn a_remembered_approval_stops_covering_a_tool_that_gained_sensitive_paths(s: Store) {
    for duration in [For::Always, For::Session] {
        let app = Asker::new();
        let first = Arc::new(AtomicUsize::new(0));
        let Some(tm) = s
            .build(Toolmark::builder().confirm_handler(app.handler(move || {
                if first.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    Decision::approve().by("user-1").remember(duration)
                } else {
                    Decision::reject_with("asked again").into()
                }
            })))
            .await
        else {
            return;
        };
        let r = Arc::new(AtomicUsize::new(0));
        unlock(&tm, &[], &r);
        assert!(tm
            .call("door.unlock", json!({}), opts(Caller::Mcp))
            .await
            .is_ok());
        assert!(tm
            .call("door.unlock", json!({}), opts(Caller::Mcp))
            .await
            .is_ok());
        assert_eq!(app.count(), 1, "remembered");
        // Registered again: now its `pin` is sensitive. The approver never saw it.
        unlock(&tm, &["pin"], &r);
        let out = tm
            .call("door.unlock", json!({"pin": "PIN-7310"}), opts(Caller::Mcp))
            .await;
        assert_eq!(message(&out), "asked again", "{duration:?}: {out:?}");
        assert_eq!(runs(&r), 2);
    }
}

async fn a_remembered_rejection_still_covers_a_tool_that_gained_sensitive_paths(s: Store) {
    let app = Asker::new();
    let Some(tm) = s
        .build(Toolmark::builder().confirm_handler(app.handler(|| {
            Decision::reject_with("no doors")
                .by("user-1")
                .remember(For::Always)
        })))
        .await
    else {
        return;
    };
    let r = Arc::new(AtomicUsize::new(0));
    unlock(&tm, &[], &r);
    assert_eq!(
        message(&tm.call("door.unlock", json!({}), opts(Caller::Mcp)).await),
        "no doors"
    );
    unlock(&tm, &["pin"], &r);
    let out = tm
        .call("door.unlock", json!({"pin": "x"}), opts(Caller::Mcp))
        .await;
    assert_eq!(message(&out), "no doors");
    assert_eq!((app.count(), runs(&r)), (1, 0));
}

/// `github` (transparent) holds `delete_repo` and `list_repos`; `gitlab`
/// (transparent) holds `drop_project`; `org` holds a transparent `team` with
/// `remove_member` (full name `org.remove_member`); a transparent `tools` holds
/// a scope `ci` with `cancel` (full name `ci.cancel`).
fn transparent_tools(builder: toolmark::ToolmarkBuilder) -> (Toolmark, Arc<AtomicUsize>) {
    let tm = builder.build().unwrap();
    let r = Arc::new(AtomicUsize::new(0));
    let clear = || ScopeOptions {
        transparent: true,
        ..Default::default()
    };
    let gh = tm.scope_with("github", clear());
    gh.register(tool("delete_repo", Effect::Destructive, &r))
        .unwrap();
    gh.register(tool("close_issue", Effect::Consequential, &r))
        .unwrap();
    tm.scope_with("gitlab", clear())
        .register(tool("drop_project", Effect::Destructive, &r))
        .unwrap();
    tm.scope("org")
        .scope_with("team", clear())
        .register(tool("remove_member", Effect::Destructive, &r))
        .unwrap();
    tm.scope_with("tools", clear())
        .scope("ci")
        .register(tool("cancel", Effect::Consequential, &r))
        .unwrap();
    (tm, r)
}

#[tokio::test]
async fn a_scope_rule_covers_the_tools_of_a_transparent_scope() {
    let (tm, r) = transparent_tools(
        Toolmark::builder()
            .policy(Policy::new().rule(Rule::deny("no-gh", "Not on GitHub").scope("github")))
            .confirm_handler(|_req| async { Decision::approve() }),
    );
    for tool in ["delete_repo", "close_issue"] {
        let out = tm.call(tool, json!({}), opts(Caller::Mcp)).await;
        assert_eq!(message(&out), "Not on GitHub", "{tool}: {out:?}");
    }
    // Not another transparent scope's tools.
    assert!(tm
        .call("drop_project", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(runs(&r), 1);
}

#[tokio::test]
async fn a_scope_rule_matches_by_path_through_transparent_and_plain_scopes() {
    let cases: [(&str, &[&str], &[&str]); 5] = [
        // Rule scope → tools it covers → tools it does not.
        ("org", &["org.remove_member"], &["delete_repo", "ci.cancel"]),
        ("org.team", &["org.remove_member"], &["delete_repo"]),
        ("tools", &["ci.cancel"], &["org.remove_member"]),
        ("tools.ci", &["ci.cancel"], &["delete_repo"]),
        ("ci", &["ci.cancel"], &["org.remove_member", "close_issue"]),
    ];
    for (scope, covered, not) in cases {
        let (tm, _) = transparent_tools(
            Toolmark::builder()
                .policy(Policy::new().rule(Rule::deny("r", "denied").scope(scope)))
                .confirm_handler(|_req| async { Decision::approve() }),
        );
        for tool in covered {
            let out = tm.call(tool, json!({}), opts(Caller::Mcp)).await;
            assert_eq!(message(&out), "denied", "{scope} covers {tool}: {out:?}");
        }
        for tool in not {
            let out = tm.call(tool, json!({}), opts(Caller::Mcp)).await;
            assert!(out.is_ok(), "{scope} does not cover {tool}: {out:?}");
        }
    }
}

#[tokio::test]
async fn a_person_rule_and_an_allow_rule_on_a_transparent_scope_apply_to_its_tools() {
    // No confirm handler: an inline caller sees a guarded tool only when a rule
    // decides it without asking (the manifest follows membership too).
    let (tm, r) = transparent_tools(
        Toolmark::builder().policy(
            Policy::new()
                .rule(Rule::allow("gh-ok").scope("github"))
                .rule(Rule::require_person("gl-person").scope("gitlab")),
        ),
    );
    let names: Vec<String> = tm
        .manifest(Caller::Mcp)
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"delete_repo".to_owned()), "{names:?}");
    assert!(!names.contains(&"drop_project".to_owned()), "{names:?}");
    assert!(tm
        .call("delete_repo", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    let out = tm
        .call("drop_project", json!({}), opts(Caller::InApp))
        .await;
    let id = out.confirm_id().expect("deferred").to_owned();
    let out = tm.confirm_pending(&id, Decision::approve()).await;
    assert_eq!(
        code(&out),
        Some(toolmark::RefusalCode::NotAllowed),
        "a person is needed: {out:?}"
    );
    assert!(tm
        .confirm_pending(&id, Decision::approve().by("user-1"))
        .await
        .is_ok());
    assert_eq!(runs(&r), 2);
}

#[test]
fn rule_matches_alone_judges_a_scope_by_the_name() {
    let rule = Rule::deny("r", "x").scope("github");
    assert!(rule.matches("github.delete_repo", Effect::Destructive, Caller::Mcp));
    assert!(!rule.matches("delete_repo", Effect::Destructive, Caller::Mcp));
    assert!(!rule.matches("githubx.y", Effect::Destructive, Caller::Mcp));
}
