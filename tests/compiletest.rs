//! The `#[tool]` forms that must compile and run (`tests/ui-pass/*.rs`) are test
//! targets of their own in Cargo.toml (`ui_pass_<file>`, `harness = false`), built with
//! the other tests' dependencies; this test keeps that list complete. The compile-fail
//! cases (the diagnostics, `tests/ui`) run from the `toolmark-ui` package (`ui/`).

/// Every `tests/ui-pass/<file>.rs` is a `[[test]]` named `ui_pass_<file>` with
/// `harness = false` (a case missing from Cargo.toml would silently never run).
#[test]
fn every_pass_case_is_a_test_target() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    // The `[[test]]` tables as (name, path, harness) triples.
    let targets: Vec<(String, String, bool)> = manifest
        .split("[[")
        .filter(|table| table.starts_with("test]]"))
        .map(|table| {
            let value = |key: &str| {
                table
                    .lines()
                    .find_map(|l| l.trim().strip_prefix(key)?.trim().strip_prefix('='))
                    .map(|v| v.trim().trim_matches('"').to_owned())
                    .unwrap_or_default()
            };
            (value("name"), value("path"), value("harness") == "false")
        })
        .collect();
    let mut cases: Vec<String> = std::fs::read_dir(root.join("tests/ui-pass"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".rs"))
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no pass cases found in tests/ui-pass");
    let missing: Vec<String> = cases
        .iter()
        .filter(|file| {
            let stem = file.trim_end_matches(".rs");
            !targets.contains(&(
                format!("ui_pass_{stem}"),
                format!("tests/ui-pass/{file}"),
                true,
            ))
        })
        .map(|file| {
            let stem = file.trim_end_matches(".rs");
            format!(
                "[[test]]\nname = \"ui_pass_{stem}\"\npath = \"tests/ui-pass/{file}\"\nharness = false"
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "tests/ui-pass cases that Cargo.toml does not run; add:\n\n{}",
        missing.join("\n\n")
    );
}
