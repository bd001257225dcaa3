//! The `#[tool]` diagnostics: one UI case per diagnostic, `tests/ui/<what-is-wrong>.rs`
//! with its `.stderr` (the repository's `tests/ui`; `ui/tests/ui` is a symlink to it).
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test -p toolmark-ui`,
//! then read each one: the `^^^` must sit under the offending token.
//!
//! Only compile-fail cases run here, so trybuild checks them all in one `cargo check`
//! (no code generation, neither for them nor for its own build of the dependencies),
//! and this package's dependencies are few, so trybuild checks little beside
//! toolmark. The forms that must compile and run are the suite's test targets
//! (`tests/ui-pass` at the repository root).

#[test]
fn ui() {
    // trybuild builds its dependencies with `--cfg trybuild --verbose -A dead_code`
    // and the cases with those flags and `--diagnostic-width=140`: different flags,
    // so cargo would check every dependency twice. These flags (the cases' own, the
    // one set cargo then uses for every unit trybuild builds) make it once.
    if std::env::var_os("CARGO_ENCODED_RUSTFLAGS").is_none() {
        let flags = [
            "--cfg",
            "trybuild",
            "--verbose",
            "-A",
            "dead_code",
            "--diagnostic-width=140",
        ];
        std::env::set_var("CARGO_ENCODED_RUSTFLAGS", flags.join("\u{1f}"));
    }
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
