//! Nothing to use here: this package holds the compile-fail UI tests of Toolmark's
//! `#[tool]` macro (`tests/compiletest.rs`, the cases in `tests/ui`). Being small,
//! it keeps trybuild's build small.
