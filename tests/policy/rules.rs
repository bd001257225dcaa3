//! Policy rules: allow, deny, ask; by name, scope prefix, effect and caller; the
//! first match wins; the deny reason reaches the outcome.

use serde_json::json;
use toolmark::policy::Verdict;
use toolmark::{Caller, ConfigError, Effect, Policy, Rule, Toolmark};

use crate::*;

fn tm_with(
    policy: Policy,
) -> (
    Toolmark,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
    Asker,
) {
    let asker = Asker::new();
    let (tm, r) = with_tools(
        Toolmark::builder()
            .policy(policy)
            .confirm_handler(asker.handler(approve)),
    );
    (tm, r, asker)
}

#[tokio::test]
async fn allow_by_name_runs_without_asking_as_the_caller() {
    let (tm, r, asker) = tm_with(Policy::new().rule(Rule::allow("drafts").tool("mail.save_draft")));
    let out = tm
        .call("mail.save_draft", json!({}), opts(Caller::Mcp))
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(asker.count(), 0);
    assert_eq!(runs(&r), 1);
    // It ran as its own caller: nobody approved as the user.
    assert_eq!(caller_of(&out), json!("mcp"));
    // Another tool still asks.
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(asker.count(), 1);
}

#[tokio::test]
async fn allow_of_a_deferred_caller_runs_at_once_instead_of_needs_confirmation() {
    let (tm, r, _) = tm_with(Policy::new().rule(Rule::allow("drafts").tool("mail.save_draft")));
    let out = tm
        .call("mail.save_draft", json!({}), opts(Caller::InApp))
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(caller_of(&out), json!("inapp"));
    assert_eq!(runs(&r), 1);
    assert!(tm.pending_confirmations().is_empty());
    // Without the rule, the same call is deferred.
    let out = tm.call("mail.send", json!({}), opts(Caller::InApp)).await;
    assert!(out.confirm_id().is_some(), "{out:?}");
}

#[tokio::test]
async fn deny_by_scope_prefix_is_rejected_with_the_policy_reason() {
    let (tm, r, asker) = tm_with(
        Policy::new().rule(Rule::deny("no-pay", "Payments are made in the app").scope("pay")),
    );
    for name in ["pay.send", "pay.cards.add"] {
        let out = tm.call(name, json!({}), opts(Caller::Mcp)).await;
        assert_eq!(code(&out), Some(RefusalCode::Rejected), "{name}: {out:?}");
        assert_eq!(message(&out), "Payments are made in the app");
    }
    // Deferred callers are refused too, and nothing is left pending.
    let out = tm.call("pay.send", json!({}), opts(Caller::InApp)).await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected));
    assert!(tm.pending_confirmations().is_empty());
    assert_eq!(runs(&r), 0);
    assert_eq!(asker.count(), 0);
    // A prefix is a scope, not a string prefix: `payroll.run` and the root tool
    // `pay` are outside it.
    assert!(tm
        .call("payroll.run", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert!(tm.call("pay", json!({}), opts(Caller::Mcp)).await.is_ok());
    assert_eq!(asker.count(), 2);
}

#[tokio::test]
async fn deny_by_effect_leaves_other_effects_asking() {
    let (tm, r, asker) = tm_with(
        Policy::new()
            .rule(Rule::deny("no-deletes", "Deleting is done by hand").effect(Effect::Destructive)),
    );
    let out = tm.call("files.delete", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected));
    assert_eq!(message(&out), "Deleting is done by hand");
    assert_eq!(runs(&r), 0);
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(asker.count(), 1);
}

#[tokio::test]
async fn a_rule_by_caller_matches_that_caller_only() {
    let (tm, _, asker) = tm_with(
        Policy::new().rule(
            Rule::deny("no-mcp", "Not over MCP")
                .caller(Caller::Mcp)
                .caller(Caller::WebMcp),
        ),
    );
    for caller in [Caller::Mcp, Caller::WebMcp] {
        let out = tm.call("mail.send", json!({}), opts(caller)).await;
        assert_eq!(code(&out), Some(RefusalCode::Rejected), "{caller}");
    }
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Test))
        .await
        .is_ok());
    assert_eq!(asker.count(), 1);
}

#[tokio::test]
async fn conditions_of_different_kinds_must_all_hold() {
    let rule = Rule::allow("mcp-mail")
        .scope("mail")
        .caller(Caller::Mcp)
        .effect(Effect::Consequential);
    assert!(rule.matches("mail.send", Effect::Consequential, Caller::Mcp));
    assert!(!rule.matches("mail.send", Effect::Consequential, Caller::Test));
    assert!(!rule.matches("mail.send", Effect::Destructive, Caller::Mcp));
    assert!(!rule.matches("files.send", Effect::Consequential, Caller::Mcp));
    // A rule with no condition matches everything.
    assert!(Rule::ask("all").matches("x.y", Effect::Destructive, Caller::Tour));
    // Alternatives of one kind.
    let two = Rule::allow("two").tool("a.x").tool("b.y");
    assert!(two.matches("a.x", Effect::Consequential, Caller::Mcp));
    assert!(two.matches("b.y", Effect::Consequential, Caller::Mcp));
    assert!(!two.matches("a.y", Effect::Consequential, Caller::Mcp));
    // A trailing dot in a scope is the same scope.
    assert!(Rule::allow("p")
        .scope("pay.")
        .matches("pay.send", Effect::Consequential, Caller::Mcp));
}

#[tokio::test]
async fn the_first_matching_rule_wins() {
    // An ask before a broad allow keeps that tool asking...
    let (tm, r, asker) = tm_with(
        Policy::new()
            .rule(Rule::ask("keep-asking").tool("mail.send"))
            .rule(Rule::allow("mail").scope("mail")),
    );
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(asker.count(), 1);
    assert!(tm
        .call("mail.save_draft", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(asker.count(), 1);
    assert_eq!(runs(&r), 2);

    // ...and the same rules the other way round allow it.
    let (tm, _, asker) = tm_with(
        Policy::new()
            .rule(Rule::allow("mail").scope("mail"))
            .rule(Rule::ask("keep-asking").tool("mail.send")),
    );
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(asker.count(), 0);

    // A deny after an allow of the same call never applies.
    let policy = Policy::new()
        .rule(Rule::allow("a").tool("mail.send"))
        .rule(Rule::deny("d", "no").tool("mail.send"));
    assert_eq!(
        policy
            .first_match("mail.send", Effect::Consequential, Caller::Mcp)
            .map(|r| r.id()),
        Some("a")
    );
    assert_eq!(
        policy.first_match("mail.other", Effect::Consequential, Caller::Mcp),
        None
    );
    assert_eq!(
        policy.rules()[1].verdict(),
        &Verdict::Deny {
            reason: "no".into()
        }
    );
}

#[tokio::test]
async fn no_matching_rule_asks_as_before() {
    let (tm, r, asker) = tm_with(Policy::new().rule(Rule::deny("d", "no").tool("other.tool")));
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(asker.count(), 1);
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::InApp))
        .await
        .confirm_id()
        .is_some());
    assert_eq!(runs(&r), 1);
}

#[tokio::test]
async fn the_policy_governs_approvals_only() {
    // A deny-everything rule leaves human calls and read/write tools alone.
    let tm = Toolmark::builder()
        .policy(Policy::new().rule(Rule::deny("all", "no")))
        .build()
        .unwrap();
    let r = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tm.scope("notes")
        .register(tool("write", Effect::Write, &r))
        .unwrap();
    tm.scope("mail")
        .register(tool("send", Effect::Consequential, &r))
        .unwrap();
    assert!(tm
        .call("notes.write", json!({}), opts(Caller::InApp))
        .await
        .is_ok());
    assert!(tm
        .call("mail.send", json!({}), opts(Caller::Human))
        .await
        .is_ok());
    assert_eq!(
        code(&tm.call("mail.send", json!({}), opts(Caller::InApp)).await),
        Some(RefusalCode::Rejected)
    );
    assert_eq!(runs(&r), 2);
}

#[tokio::test]
async fn invalid_input_is_refused_before_the_policy() {
    let (tm, _, _) = tm_with(Policy::new().rule(Rule::deny("no", "no").tool("mail.send")));
    let out = tm
        .call("mail.send", json!({"bogus": 1}), opts(Caller::Mcp))
        .await;
    assert_eq!(code(&out), Some(RefusalCode::Invalid));
}

#[test]
fn a_policy_that_cannot_be_audited_does_not_build() {
    for (policy, why) in [
        (
            Policy::new()
                .rule(Rule::allow("a"))
                .rule(Rule::deny("a", "x")),
            "two rules have the id `a`",
        ),
        (Policy::new().rule(Rule::allow(" ")), "empty id"),
        (
            Policy::new().rule(Rule::allow("x").tool("")),
            "empty tool or scope",
        ),
    ] {
        match Toolmark::builder().policy(policy).build() {
            Err(
                e @ ConfigError::InvalidOption {
                    option: "policy", ..
                },
            ) => {
                assert_eq!(e.code(), "invalid_option");
                assert!(e.to_string().contains(why), "{e}");
            }
            other => panic!("expected invalid_option, got {other:?}"),
        }
    }
}
