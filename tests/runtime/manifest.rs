//! The manifest cache: a read is shared, JSON is made once per version, and only
//! changes a caller could see make a new manifest.

use std::sync::Arc;

use toolmark::{Caller, ScopeOptions};

use crate::common::*;

#[test]
fn a_cached_manifest_is_shared_until_something_changes() {
    let tm = tm();
    tm.scope("a").register(echo("one")).unwrap();
    let first = tm.manifest_shared(Caller::InApp);
    assert!(Arc::ptr_eq(&first, &tm.manifest_shared(Caller::InApp)));
    assert_eq!(&*first, tm.manifest(Caller::InApp).as_slice());
    tm.scope("a").register(echo("two")).unwrap();
    let second = tm.manifest_shared(Caller::InApp);
    assert!(!Arc::ptr_eq(&first, &second));
    assert_eq!(first.len(), 1, "an old list never changes");
    assert_eq!(second.len(), 2);
}

#[test]
fn manifest_json_is_the_manifest_serialized_once_per_version() {
    let tm = tm();
    tm.scope("a").register(echo("one")).unwrap();
    let json = tm.manifest_json(Caller::Mcp);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&json).unwrap(),
        serde_json::to_value(tm.manifest(Caller::Mcp)).unwrap()
    );
    assert!(Arc::ptr_eq(&json, &tm.manifest_json(Caller::Mcp)));
    tm.scope("a").set_when(false);
    assert_eq!(&*tm.manifest_json(Caller::Mcp), "[]");
}

#[test]
fn showing_or_hiding_a_scope_without_tools_changes_no_manifest() {
    let tm = tm();
    tm.scope("a").register(echo("one")).unwrap();
    let empty = tm.scope_with(
        "empty",
        ScopeOptions {
            when: true,
            ..Default::default()
        },
    );
    let nested_empty = empty.scope("inner");
    let before = tm.manifest_version();
    let list = tm.manifest_shared(Caller::InApp);
    empty.set_when(false);
    nested_empty.set_when(false);
    empty.set_when(true);
    assert_eq!(tm.manifest_version(), before);
    assert!(Arc::ptr_eq(&list, &tm.manifest_shared(Caller::InApp)));
    // A tool registered into a hidden subtree, then shown: both are changes.
    nested_empty.register(echo("late")).unwrap();
    assert!(tm.manifest_version() > before);
    let hidden_version = tm.manifest_version();
    assert!(!names(&tm, Caller::InApp).contains(&"empty.inner.late".to_owned()));
    nested_empty.set_when(true);
    assert!(tm.manifest_version() > hidden_version);
    assert!(names(&tm, Caller::InApp).contains(&"empty.inner.late".to_owned()));
    // Hiding an ancestor of a tool changes the manifest.
    empty.set_when(false);
    assert!(!names(&tm, Caller::InApp).contains(&"empty.inner.late".to_owned()));
}
