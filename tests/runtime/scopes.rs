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

// Scopes that start hidden, declared on the builder, and tools that show or hide
// scopes through their context.

mod declared {
    use serde_json::json;
    use toolmark::{
        tool, Caller, Effect, RefusalCode, ScopeOptions, ToolContext, ToolSpec, Toolmark,
    };

    use crate::common::*;

    /// Refund a payment.
    #[tool(scope = "billing")]
    async fn refund(payment: String) -> String {
        format!("refunded {payment}")
    }

    /// Open or close the billing tab (shows or hides the `billing` scope).
    #[tool(scope = "settings")]
    async fn billing_tab(open: bool, ctx: ToolContext) -> bool {
        let billing = ctx
            .scope_at("billing")
            .expect("a run reaches its toolmark's scopes");
        billing.set_when(open);
        billing.is_visible()
    }

    fn hidden_billing() -> Toolmark {
        let tm = Toolmark::builder()
            .scope_at("billing", ScopeOptions::hidden())
            .build()
            .unwrap();
        tm.register_collected_where(|c| c.module_path.ends_with("scopes::declared"))
            .unwrap();
        tm
    }

    #[tokio::test]
    async fn a_scope_declared_hidden_on_the_builder_starts_hidden() {
        let tm = hidden_billing();
        assert_eq!(names(&tm, Caller::InApp), ["settings.billing_tab"]);
        let out = tm
            .call("billing.refund", json!({"payment": "p1"}), as_inapp())
            .await;
        assert_eq!(code(&out), Some(RefusalCode::UnknownTool));

        tm.scope_at("billing").set_when(true);
        assert_eq!(
            names(&tm, Caller::InApp),
            ["billing.refund", "settings.billing_tab"]
        );
        let out = tm
            .call("billing.refund", json!({"payment": "p1"}), as_inapp())
            .await;
        assert_eq!(ok(&out), &json!("refunded p1"));
    }

    #[tokio::test]
    async fn a_tool_shows_and_hides_a_scope_through_its_context() {
        let tm = hidden_billing();
        let before = tm.manifest_version();
        let out = tm
            .call("settings.billing_tab", json!({"open": true}), as_inapp())
            .await;
        assert_eq!(ok(&out), &json!(true));
        assert!(tm.manifest_version() > before, "the manifest changed");
        assert!(tm
            .call("billing.refund", json!({"payment": "p2"}), as_inapp())
            .await
            .is_ok());

        let out = tm
            .call("settings.billing_tab", json!({"open": false}), as_inapp())
            .await;
        assert_eq!(ok(&out), &json!(false));
        assert_eq!(names(&tm, Caller::InApp), ["settings.billing_tab"]);
        assert!(!tm.scope_at("billing").is_visible());
    }

    #[tokio::test]
    async fn a_dynamic_tool_reaches_nested_scopes_and_creates_missing_ones() {
        let tm = tm();
        tm.scope("panel")
            .register(
                ToolSpec::new("close", "Close a dialog")
                    .effect(Effect::Write)
                    .handler(|ctx: ToolContext, _input| async move {
                        let dialog = ctx.scope_at("panel.dialog").expect("in a run");
                        dialog.set_when(false);
                        Ok(json!(dialog.path()))
                    }),
            )
            .unwrap();
        tm.scope_at("panel.dialog").register(echo("ok")).unwrap();
        assert_eq!(
            names(&tm, Caller::InApp),
            ["panel.close", "panel.dialog.ok"]
        );
        let out = tm.call("panel.close", json!({}), as_inapp()).await;
        assert_eq!(ok(&out), &json!("panel.dialog"));
        assert_eq!(names(&tm, Caller::InApp), ["panel.close"]);
    }

    #[tokio::test]
    async fn a_declared_scope_starts_hidden_again_when_made_after_disposal() {
        let tm = hidden_billing();
        let billing = tm.scope_at("billing");
        billing.set_when(true);
        billing.dispose();
        let fresh = tm.scope_at("billing");
        assert!(!fresh.same_scope(&billing));
        assert!(!fresh.when(), "the declared options apply to the new scope");
        fresh.register(echo("again")).unwrap();
        assert!(!names(&tm, Caller::InApp).contains(&"billing.again".to_owned()));
        fresh.set_when(true);
        assert!(names(&tm, Caller::InApp).contains(&"billing.again".to_owned()));
    }

    #[test]
    fn declared_options_apply_to_their_own_path_only() {
        let tm = Toolmark::builder()
            .scope_at("a.b", ScopeOptions::hidden())
            .scope_at(
                "plugins",
                ScopeOptions {
                    transparent: true,
                    ..Default::default()
                },
            )
            .build()
            .unwrap();
        let a = tm.scope("a");
        assert!(a.when(), "the scope above keeps the defaults");
        let b = a.scope("b");
        assert!(!b.when());
        assert!(!tm.scope_at("a.b.c").is_visible(), "hidden under a.b");
        assert!(tm.scope_at("a.b.c").when(), "a.b.c has its own defaults");
        assert!(tm.scope("plugins").is_transparent());
        // Options given where the scope is made win over the declared ones.
        let tm2 = Toolmark::builder()
            .scope_at("x", ScopeOptions::hidden())
            .build()
            .unwrap();
        assert!(tm2.scope_with("x", ScopeOptions::default()).when());
    }

    #[test]
    fn declaring_a_path_again_replaces_its_options() {
        let tm = Toolmark::builder()
            .scope_at("tab", ScopeOptions::hidden())
            .scope_at("tab", ScopeOptions::default())
            .build()
            .unwrap();
        assert!(tm.scope("tab").when());
    }

    #[test]
    fn a_malformed_declared_path_fails_build_with_invalid_option() {
        for path in ["", "a..b", "a.", "a b", "bill$"] {
            let err = Toolmark::builder()
                .scope_at(path, ScopeOptions::hidden())
                .build()
                .expect_err(path);
            assert_eq!(err.code(), "invalid_option", "{path}");
            assert!(err.to_string().contains("scope_at"), "{path}: {err}");
        }
    }

    #[tokio::test]
    async fn a_test_context_reaches_scopes_only_of_the_toolmark_it_is_given() {
        let tm = hidden_billing();
        let bare = toolmark::testing::context(Caller::Test).build();
        assert!(bare.scope_at("billing").is_none());

        let ctx = toolmark::testing::context(Caller::Test)
            .toolmark(&tm)
            .build();
        let scope = ctx.scope_at("billing").expect("given a toolmark");
        assert!(scope.same_scope(&tm.scope_at("billing")));
        // The tool fn called directly, as a unit test would.
        assert!(billing_tab(true, ctx.clone()).await);
        assert!(tm.scope_at("billing").is_visible());

        drop(tm);
        assert!(ctx.scope_at("billing").is_none(), "the toolmark is gone");
    }
}
