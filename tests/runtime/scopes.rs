//! Every rule of seeds/scopes.txt.

use serde_json::json;
use toolmark::{Caller, RefusalCode, RegisterOptions, ScopeOptions};

use crate::common::*;

#[tokio::test]
async fn scope_path_prefixes_the_names_of_its_tools() {
    let tm = tm();
    let challenges = tm.scope("challenges");
    let create = challenges.scope("create");
    tm.register(
        echo("fill"),
        RegisterOptions {
            scope: Some(create.clone()),
        },
    )
    .unwrap();
    assert_eq!(names(&tm, Caller::InApp), ["challenges.create.fill"]);
    let out = tm
        .call("challenges.create.fill", json!({"x": 1}), as_inapp())
        .await;
    assert_eq!(ok(&out), &json!({"x": 1}));
    assert_eq!(
        code(&tm.call("fill", empty(), as_inapp()).await),
        Some(RefusalCode::UnknownTool)
    );
}

#[test]
fn nesting_is_only_through_scope_scope() {
    let tm = tm();
    // tm.scope creates root-level scopes: a dotted name is not a path.
    let dotted = tm.scope("a.b");
    let err = dotted.register(echo("t")).unwrap_err();
    assert_eq!(err.code(), "invalid_name");
    // Nesting goes through scope.scope; scope_at walks the same tree.
    let b = tm.scope("a").scope("b");
    assert!(b.same_scope(&tm.scope_at("a.b")));
    assert_eq!(b.path(), "a.b");
}

#[test]
fn getting_an_existing_scope_returns_it_unchanged() {
    let tm = tm();
    let first = tm.scope_with(
        "tabs",
        ScopeOptions {
            when: false,
            ..Default::default()
        },
    );
    let again = tm.scope_with(
        "tabs",
        ScopeOptions {
            when: true,
            transparent: true,
        },
    );
    assert!(first.same_scope(&again));
    assert!(!again.when(), "options apply at creation only");
    assert!(!again.is_transparent());
}

#[tokio::test]
async fn when_false_hides_a_scopes_tools_and_its_descendants() {
    let tm = tm();
    let challenges = tm.scope("challenges");
    let create = challenges.scope_with(
        "create",
        ScopeOptions {
            when: false,
            ..Default::default()
        },
    );
    create.register(echo("fill")).unwrap();
    challenges.register(echo("list")).unwrap();
    assert_eq!(names(&tm, Caller::InApp), ["challenges.list"]);
    let out = tm.call("challenges.create.fill", empty(), as_inapp()).await;
    assert_eq!(code(&out), Some(RefusalCode::UnknownTool));

    create.set_when(true);
    assert_eq!(
        names(&tm, Caller::InApp),
        ["challenges.create.fill", "challenges.list"]
    );
    assert!(tm
        .call("challenges.create.fill", empty(), as_inapp())
        .await
        .is_ok());

    // Hiding the parent hides the descendants too.
    challenges.set_when(false);
    assert!(names(&tm, Caller::InApp).is_empty());
    assert!(!create.is_visible());
    let out = tm.call("challenges.create.fill", empty(), as_inapp()).await;
    assert_eq!(code(&out), Some(RefusalCode::UnknownTool));
    challenges.set_when(true);
    assert_eq!(names(&tm, Caller::InApp).len(), 2);
}

#[tokio::test]
async fn transparent_scopes_add_no_name_segment() {
    let tm = tm();
    let server = tm.scope_with(
        "server",
        ScopeOptions {
            transparent: true,
            ..Default::default()
        },
    );
    server.register(echo("remote_tool")).unwrap();
    let nested = tm.scope("app").scope_with(
        "plugins",
        ScopeOptions {
            transparent: true,
            ..Default::default()
        },
    );
    nested.register(echo("p")).unwrap();
    assert_eq!(names(&tm, Caller::InApp), ["app.p", "remote_tool"]);
    assert!(tm.call("remote_tool", empty(), as_inapp()).await.is_ok());
    // ...but still group the tools for `when` and disposal.
    server.set_when(false);
    assert_eq!(names(&tm, Caller::InApp), ["app.p"]);
    server.set_when(true);
    server.dispose();
    assert_eq!(names(&tm, Caller::InApp), ["app.p"]);
    assert_eq!(
        code(&tm.call("remote_tool", empty(), as_inapp()).await),
        Some(RefusalCode::UnknownTool)
    );
}

#[tokio::test]
async fn disposal_unregisters_the_scope_and_its_descendants() {
    let tm = tm();
    let challenges = tm.scope("challenges");
    let create = challenges.scope("create");
    create.register(echo("fill")).unwrap();
    challenges.register(echo("list")).unwrap();
    tm.register(echo("other"), RegisterOptions::default())
        .unwrap();
    challenges.dispose();
    assert_eq!(names(&tm, Caller::InApp), ["other"]);
    assert!(create.is_disposed());
    assert_eq!(
        code(&tm.call("challenges.create.fill", empty(), as_inapp()).await),
        Some(RefusalCode::UnknownTool)
    );
    // The names are free again in a fresh scope.
    let fresh = tm.scope("challenges");
    assert!(!fresh.same_scope(&challenges));
    fresh.scope("create").register(echo("fill")).unwrap();
    assert!(tm
        .call("challenges.create.fill", empty(), as_inapp())
        .await
        .is_ok());
}

#[test]
fn registering_into_a_disposed_scope_is_scope_disposed() {
    let tm = tm();
    let s = tm.scope("dialog");
    s.dispose();
    let err = s.register(echo("t")).unwrap_err();
    assert_eq!(err.code(), "scope_disposed");
    // A child of a disposed scope is dead too.
    let err = s.scope("inner").register(echo("t")).unwrap_err();
    assert_eq!(err.code(), "scope_disposed");
    // Old handles stay dead after a fresh scope of that name exists.
    let fresh = tm.scope("dialog");
    fresh.register(echo("t")).unwrap();
    assert_eq!(s.register(echo("u")).unwrap_err().code(), "scope_disposed");
}

#[test]
fn a_scope_guard_disposes_on_drop() {
    let tm = tm();
    {
        let guard = tm.scope("modal").guard();
        guard.register(echo("close")).unwrap();
        assert_eq!(names(&tm, Caller::InApp), ["modal.close"]);
    }
    assert!(names(&tm, Caller::InApp).is_empty());
}

#[test]
fn the_manifest_changes_version_when_scopes_show_hide_or_dispose() {
    let tm = tm();
    let s = tm.scope("s");
    s.register(echo("t")).unwrap();
    let v0 = tm.manifest_version();
    s.set_when(false);
    let v1 = tm.manifest_version();
    assert!(v1 > v0);
    s.set_when(false);
    assert_eq!(tm.manifest_version(), v1, "no change, no new version");
    s.dispose();
    assert!(tm.manifest_version() > v1);
}
