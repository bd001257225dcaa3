//! The name mapping, by property: for random manifests (scopes and tool names
//! from Toolmark's grammar, including look-alikes such as `a.b` and `a__b` and
//! names far over the length limit), every provider's names are valid, distinct,
//! stable, and map back exactly.

use std::collections::BTreeSet;

use proptest::prelude::*;
use toolmark::agent::{valid_name, NameMap, Provider};

/// A segment: mostly from a tiny alphabet (so forms collide), sometimes long.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[ab_]{1,4}",
        3 => "[A-Za-z0-9_-]{1,12}",
        1 => "[a-z0-9_-]{30,70}",
    ]
}

/// A full name: 0–3 scope segments and a tool name, joined by dots.
fn full_name() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 1..5).prop_map(|s| s.join("."))
}

fn manifest() -> impl Strategy<Value = BTreeSet<String>> {
    prop::collection::btree_set(full_name(), 1..16)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

    #[test]
    fn mapping_is_valid_collision_free_and_reversible(names in manifest()) {
        for provider in Provider::ALL {
            let map = NameMap::new(provider, names.iter().map(String::as_str));
            prop_assert_eq!(map.len(), names.len());
            let mut seen = BTreeSet::new();
            for name in &names {
                let mapped = map.to_provider(name).unwrap();
                prop_assert!(valid_name(provider, mapped), "{:?}: {} -> {}", provider, name, mapped);
                prop_assert!(seen.insert(mapped.to_owned()), "{:?}: {} collides", provider, mapped);
                prop_assert_eq!(map.to_toolmark(mapped), Some(name.as_str()));
            }
            // Stable: the same manifest in another order maps the same way.
            let reversed = NameMap::new(provider, names.iter().rev().map(String::as_str));
            for name in &names {
                prop_assert_eq!(reversed.to_provider(name), map.to_provider(name));
            }
        }
    }
}

#[test]
fn readable_names_are_kept_when_they_fit() {
    let map = NameMap::new(Provider::Anthropic, ["crm.customers.create", "status"]);
    assert_eq!(
        map.to_provider("crm.customers.create"),
        Some("crm__customers__create")
    );
    assert_eq!(map.to_provider("status"), Some("status"));
    assert_eq!(
        map.to_toolmark("crm__customers__create"),
        Some("crm.customers.create")
    );
    assert_eq!(map.to_toolmark("crm.customers.create"), None);
}
