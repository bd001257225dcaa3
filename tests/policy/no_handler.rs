//! A policy decides for an inline caller that has no confirm handler: `allow`
//! runs the call as its own caller and lists the tool, `deny` refuses it with the
//! rule's reason; `ask` and `require_person` still need someone to ask, so the tool
//! stays hidden and the call is refused `not_allowed`.

use serde_json::json;
use toolmark::{Caller, Effect, Policy, RefusalCode, Rule, Toolmark};

use crate::*;

fn mcp_only(name: &str, r: &std::sync::Arc<std::sync::atomic::AtomicUsize>) -> toolmark::ToolSpec {
    tool(name, Effect::Consequential, r).callers([Caller::Mcp])
}

fn listed(tm: &Toolmark, caller: Caller) -> Vec<String> {
    let mut names: Vec<String> = tm.manifest(caller).into_iter().map(|t| t.name).collect();
    names.sort();
    names
}

#[tokio::test]
async fn allow_runs_an_inline_callers_call_with_no_confirm_handler() {
    let (tm, r) = with_tools(
        Toolmark::builder()
            .policy(Policy::new().rule(Rule::allow("drafts").tool("mail.save_draft"))),
    );
    let mut events = tm.events();
    let out = tm
        .call("mail.save_draft", json!({}), opts(Caller::Mcp))
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(caller_of(&out), json!("mcp"), "as its own caller");
    assert_eq!(runs(&r), 1);
    let audit = resolved(&mut events);
    assert_eq!(audit.len(), 1);
    assert_eq!(
        audit[0].3,
        Approver::Policy {
            rule: "drafts".into()
        }
    );
    // The allowed tool is listed; the others still need an approver nobody can be.
    assert_eq!(listed(&tm, Caller::Mcp), ["mail.save_draft"]);
    let out = tm.call("mail.send", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(code(&out), Some(RefusalCode::NotAllowed), "{out:?}");
    assert_eq!(runs(&r), 1);
}

#[tokio::test]
async fn deny_refuses_an_inline_callers_call_with_its_reason_and_no_handler() {
    let (tm, r) = with_tools(Toolmark::builder().policy(
        Policy::new().rule(Rule::deny("no-pay", "Payments are made in the app").scope("pay")),
    ));
    let out = tm.call("pay.send", json!({}), opts(Caller::Mcp)).await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected), "{out:?}");
    assert_eq!(message(&out), "Payments are made in the app");
    assert_eq!(runs(&r), 0);
}

#[tokio::test]
async fn ask_and_require_person_still_need_a_handler() {
    for rule in [
        Rule::ask("asks").tool("mail.send"),
        Rule::require_person("people").tool("mail.send"),
    ] {
        let (tm, r) = with_tools(Toolmark::builder().policy(Policy::new().rule(rule)));
        let out = tm.call("mail.send", json!({}), opts(Caller::Mcp)).await;
        assert_eq!(code(&out), Some(RefusalCode::NotAllowed), "{out:?}");
        assert!(listed(&tm, Caller::Mcp).is_empty());
        assert_eq!(runs(&r), 0);
    }
    // A call that brings its own handler is still not asked for a person-only
    // call, and with no app handler it is refused.
    let (tm, r) = with_tools(
        Toolmark::builder()
            .policy(Policy::new().rule(Rule::require_person("people").tool("mail.send"))),
    );
    let own = opts(Caller::Mcp).confirm_handler(|_req| async { Decision::approve() });
    let out = tm.call("mail.send", json!({}), own).await;
    assert_eq!(code(&out), Some(RefusalCode::Rejected), "{out:?}");
    assert_eq!(runs(&r), 0);
}

#[test]
fn a_tool_only_an_inline_caller_may_call_registers_when_the_policy_decides_for_it() {
    let r = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // No handler, no deferred caller, no rule: nobody could approve it.
    let tm = Toolmark::builder().build().unwrap();
    let err = tm
        .register(mcp_only("a", &r), Default::default())
        .unwrap_err();
    assert_eq!(err.code(), "missing_confirm_handler");
    // An allow or a deny rule answers every call of it.
    let tm = Toolmark::builder()
        .policy(
            Policy::new()
                .rule(Rule::allow("a").tool("a"))
                .rule(Rule::deny("b", "no").tool("b"))
                .rule(Rule::ask("c").tool("c")),
        )
        .build()
        .unwrap();
    tm.register(mcp_only("a", &r), Default::default()).unwrap();
    tm.register(mcp_only("b", &r), Default::default()).unwrap();
    let err = tm
        .register(mcp_only("c", &r), Default::default())
        .unwrap_err();
    assert_eq!(err.code(), "missing_confirm_handler");
}
