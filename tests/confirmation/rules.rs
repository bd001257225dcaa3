//! The registration check, test_toolmark, summaries and auditable events.

use serde_json::json;
use toolmark::testing::{test_toolmark, test_toolmark_builder};
use toolmark::{Caller, ConfirmMode, Decision, Event, RefusalCode, Toolmark};

use crate::*;

#[test]
fn consequential_without_any_confirmation_path_is_missing_confirm_handler() {
    let tm = Toolmark::builder().build().unwrap();
    let runs = runs();
    let err = tm
        .register(
            guarded("create", &runs).callers([Caller::Mcp, Caller::Tour]),
            Default::default(),
        )
        .unwrap_err();
    assert_eq!(err.code(), "missing_confirm_handler");
    // Inapp is deferred by default: that is a path.
    tm.register(guarded("ok", &runs), Default::default())
        .unwrap();
    // With inapp inline and no handler, no caller has a path.
    let inline = Toolmark::builder()
        .confirm_mode(Caller::InApp, ConfirmMode::Inline)
        .build()
        .unwrap();
    assert_eq!(
        inline
            .register(guarded("x", &runs), Default::default())
            .unwrap_err()
            .code(),
        "missing_confirm_handler"
    );
    // A handler is a path for every inline caller.
    let handled = Toolmark::builder()
        .confirm_handler(|_r| async { Decision::approve() })
        .build()
        .unwrap();
    handled
        .register(
            guarded("x", &runs).callers([Caller::Mcp]),
            Default::default(),
        )
        .unwrap();
    // Only human: nothing needs confirming, nothing fails.
    tm.register(
        guarded("human_only", &runs).callers([Caller::Human]),
        Default::default(),
    )
    .unwrap();
}

#[tokio::test]
async fn an_inline_caller_without_a_handler_does_not_see_guarded_tools() {
    let tm = Toolmark::builder().dev_events(true).build().unwrap();
    let mut events = tm.events();
    let runs = runs();
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    for caller in [Caller::Mcp, Caller::WebMcp, Caller::Tour, Caller::Test] {
        assert!(tm.manifest(caller).is_empty(), "{caller}");
        let out = tm.call("create", json!({}), opts(caller)).await;
        assert_eq!(code(&out), Some(RefusalCode::NotAllowed), "{caller}");
    }
    assert_eq!(tm.manifest(Caller::InApp).len(), 1);
    assert_eq!(tm.manifest(Caller::Human).len(), 1);
    let mut warned = None;
    while let Ok(e) = events.try_recv() {
        if let Event::MissingConfirmHandler { callers, .. } = e {
            warned.get_or_insert(callers);
        }
    }
    assert_eq!(
        warned.expect("a development missing_confirm_handler event"),
        [Caller::WebMcp, Caller::Mcp, Caller::Tour, Caller::Test]
    );
}

#[tokio::test]
async fn development_events_can_be_switched_off() {
    let tm = Toolmark::builder().dev_events(false).build().unwrap();
    let mut events = tm.events();
    let runs = runs();
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    while let Ok(e) = events.try_recv() {
        assert!(!e.is_development(), "{e:?}");
    }
}

#[tokio::test]
async fn human_calls_never_need_confirmation() {
    let (tm, runs) = create_tm(Toolmark::builder());
    let out = tm.call("create", json!({}), opts(Caller::Human)).await;
    assert!(out.is_ok());
    assert_eq!(count(&runs), 1);
}

#[tokio::test]
async fn read_and_write_tools_never_need_confirmation() {
    let tm = Toolmark::builder().build().unwrap();
    let runs = runs();
    tm.register(
        guarded("w", &runs).effect(toolmark::Effect::Write),
        Default::default(),
    )
    .unwrap();
    tm.register(
        guarded("r", &runs).effect(toolmark::Effect::Read),
        Default::default(),
    )
    .unwrap();
    assert!(tm.call("w", json!({}), opts(Caller::InApp)).await.is_ok());
    assert!(tm.call("r", json!({}), opts(Caller::Mcp)).await.is_ok());
}

#[tokio::test]
async fn test_toolmark_keeps_production_modes_and_approves_inline() {
    let tm = test_toolmark();
    let runs = runs();
    tm.register(guarded("create", &runs), Default::default())
        .unwrap();
    assert!(tm
        .call("create", json!({}), opts(Caller::Test))
        .await
        .is_ok());
    assert!(tm
        .call("create", json!({}), opts(Caller::Mcp))
        .await
        .is_ok());
    assert_eq!(
        tm.call("create", json!({}), opts(Caller::InApp))
            .await
            .status(),
        "needs_confirmation",
        "inapp stays deferred"
    );
    let rejecting = test_toolmark_builder()
        .confirm_handler(|_r| async { Decision::reject() })
        .build()
        .unwrap();
    rejecting
        .register(guarded("create", &runs), Default::default())
        .unwrap();
    assert_eq!(
        code(
            &rejecting
                .call("create", json!({}), opts(Caller::Test))
                .await
        ),
        Some(RefusalCode::Rejected)
    );
}

async fn the_summary_falls_back_to_title_then_description(s: Store) {
    let Some(tm) = s.build(Toolmark::builder()).await else {
        return;
    };
    let runs = runs();
    let spec = |name: &str| {
        toolmark::ToolSpec::new(name, "Delete everything")
            .effect(toolmark::Effect::Destructive)
            .handler(|_c, i| async move { Ok(i) })
    };
    tm.register(spec("a").title("Wipe the board"), Default::default())
        .unwrap();
    tm.register(spec("b"), Default::default()).unwrap();
    tm.register(
        guarded("c", &runs).summary("{{literal}} {title} #{n}"),
        Default::default(),
    )
    .unwrap();
    let summary = |o: toolmark::Outcome| json_of(&o)["summary"].as_str().unwrap().to_owned();
    assert_eq!(
        summary(tm.call("a", json!({}), opts(Caller::InApp)).await),
        "Wipe the board"
    );
    assert_eq!(
        summary(tm.call("b", json!({}), opts(Caller::InApp)).await),
        "Delete everything"
    );
    assert_eq!(
        summary(
            tm.call("c", json!({"title": "T", "n": 3}), opts(Caller::InApp))
                .await
        ),
        "{literal} T #3"
    );
    let err = tm
        .register(guarded("d", &runs).summary("{unclosed"), Default::default())
        .unwrap_err();
    assert_eq!(err.code(), "invalid_spec");
}

on_every_store!(
    approvals_are_auditable_through_events,
    the_summary_falls_back_to_title_then_description,
    confirm_ids_are_unguessable_and_unique,
);

async fn approvals_are_auditable_through_events(s: Store) {
    let Some((tm, _)) = create_on(s, Toolmark::builder()).await else {
        return;
    };
    let mut events = tm.events();
    let id = defer(&tm, "create", json!({"title": "a"})).await;
    tm.confirm_pending(&id, Decision::approve_with(json!({"title": "b"})))
        .await;
    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        match &e {
            Event::ConfirmationRequested {
                confirm_id, mode, ..
            } => {
                assert_eq!(confirm_id, &id);
                assert_eq!(*mode, ConfirmMode::Deferred);
            }
            Event::ConfirmationResolved {
                approved,
                edited_paths,
                ..
            } => {
                assert!(approved);
                assert_eq!(edited_paths, &["title"]);
            }
            _ => {}
        }
        seen.push(e.kind());
    }
    assert!(seen.contains(&"confirmation_requested"));
    assert!(seen.contains(&"confirmation_resolved"));
}

async fn confirm_ids_are_unguessable_and_unique(s: Store) {
    let Some((tm, _)) = create_on(s, Toolmark::builder().max_pending(1000)).await else {
        return;
    };
    let mut ids = std::collections::HashSet::new();
    for _ in 0..500 {
        let out = tm.call("create", json!({}), opts(Caller::InApp)).await;
        assert!(ids.insert(out.confirm_id().unwrap().to_owned()));
    }
}
