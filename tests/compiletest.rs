//! The `#[tool]` diagnostics (one UI case per diagnostic, `tests/ui/<what-is-wrong>.rs`
//! with its `.stderr`) and the forms that must compile and run (`tests/ui-pass`).
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test
//! compiletest`, then read each one: the `^^^` must sit under the offending token.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui-pass/*.rs");
}
