//! What a newcomer meets first, kept true: the README's dependency lines work (a
//! path that is the `toolmark` crate, a git URL that is the repository, features
//! that exist), the crates carry what the registry needs with exact `=` pins
//! between them, the examples package lists every example with the feature it
//! needs, and the README front page stays short and says how to run everything.
//!
//! `.ci/run` also packages the crates (`cargo package --workspace`), which checks
//! that what is listed here builds from the packaged sources.

use std::path::{Path, PathBuf};

use toml::{Table, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: impl AsRef<Path>) -> String {
    let path = root().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn manifest(path: &str) -> Table {
    read(path).parse().unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn workspace_package() -> Table {
    manifest("Cargo.toml")["workspace"]["package"]
        .as_table()
        .unwrap()
        .clone()
}

/// The fenced block of `lang` that follows the heading `heading` in the README.
fn readme_block(heading: &str, lang: &str) -> String {
    let readme = read("README.md");
    let at = readme
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("the README has a section `## {heading}`"));
    let rest = &readme[at..];
    let open = format!("```{lang}\n");
    let start = rest.find(&open).expect("a code block in the section") + open.len();
    let end = start + rest[start..].find("```").expect("the block ends");
    rest[start..end].to_owned()
}

/// The README's dependency lines, commented alternatives included
/// (`# or: toolmark = …`), as TOML tables.
fn readme_toolmark_lines() -> Vec<Table> {
    let block = readme_block("Add Toolmark to your app", "toml");
    let lines: Vec<Table> = block
        .lines()
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .trim_start_matches("or:")
                .trim()
        })
        .filter(|l| l.starts_with("toolmark "))
        .map(|l| {
            let l = l.split("  #").next().unwrap();
            l.parse::<Table>().unwrap_or_else(|e| panic!("{l}: {e}"))
        })
        .collect();
    assert!(lines.len() >= 2, "a path and a git form: {block}");
    lines
}

#[test]
fn the_readme_dependency_lines_work_today() {
    let features = manifest("toolmark/Cargo.toml")["features"]
        .as_table()
        .unwrap()
        .clone();
    let repository = workspace_package()["repository"]
        .as_str()
        .unwrap()
        .to_owned();
    let (mut path_form, mut git_form) = (false, false);
    for line in readme_toolmark_lines() {
        let Value::Table(dep) = &line["toolmark"] else {
            panic!("`toolmark = \"0.1\"` does not work until it is published: {line}")
        };
        assert!(
            !dep.contains_key("version"),
            "toolmark is not on crates.io yet: no version requirement ({dep})"
        );
        if let Some(path) = dep.get("path").and_then(Value::as_str) {
            // Written for an app beside a checkout: `../toolmark/toolmark`.
            let in_checkout = path.strip_prefix("../toolmark/").expect(path);
            let crate_manifest = manifest(&format!("{in_checkout}/Cargo.toml"));
            assert_eq!(crate_manifest["package"]["name"].as_str(), Some("toolmark"));
            path_form = true;
        }
        if let Some(git) = dep.get("git").and_then(Value::as_str) {
            assert_eq!(git, repository, "the git form names the repository");
            git_form = true;
        }
        for f in dep
            .get("features")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let f = f.as_str().unwrap();
            assert!(features.contains_key(f), "no feature `{f}` in toolmark");
        }
    }
    assert!(path_form && git_form, "both a path and a git form");
}

/// The registry's metadata on each published crate, and the exact pins.
#[test]
fn the_published_crates_carry_their_metadata_and_pin_each_other_exactly() {
    let ws = manifest("Cargo.toml");
    let version = ws["workspace"]["package"]["version"].as_str().unwrap();
    let pins = ws["workspace"]["dependencies"].as_table().unwrap();
    for dep in ["toolmark", "toolmark-macros", "toolmark-syntax"] {
        assert_eq!(
            pins[dep]["version"].as_str(),
            Some(format!("={version}").as_str()),
            "{dep} is pinned exactly"
        );
    }
    for krate in ["toolmark", "toolmark-macros", "toolmark-syntax"] {
        let m = manifest(&format!("{krate}/Cargo.toml"));
        let pkg = m["package"].as_table().unwrap();
        assert!(
            !pkg.contains_key("publish"),
            "{krate} is publishable: {pkg:?}"
        );
        for key in [
            "description",
            "license",
            "repository",
            "readme",
            "keywords",
            "categories",
            "include",
            "rust-version",
        ] {
            assert!(pkg.contains_key(key), "{krate}: package.{key}");
        }
        let keywords = pkg["keywords"].as_array().unwrap();
        assert!(keywords.len() <= 5, "{krate}: at most 5 keywords");
        // Every file the crate's source includes is in the package.
        let include: Vec<&str> = pkg["include"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(include.contains(&"src/**/*.rs"), "{krate}: {include:?}");
        if krate == "toolmark" {
            assert!(include.contains(&"guide/*.md"), "the guide: {include:?}");
        }
    }
    for (krate, deps) in [
        ("toolmark", &["toolmark-macros", "toolmark-syntax"][..]),
        ("toolmark-macros", &["toolmark-syntax"][..]),
    ] {
        let m = manifest(&format!("{krate}/Cargo.toml"));
        for dep in deps {
            assert_eq!(
                m["dependencies"][*dep]["workspace"].as_bool(),
                Some(true),
                "{krate} takes {dep} from the workspace (the `=` pin)"
            );
        }
    }
}

/// `cargo run --example <name>` at the root reaches the examples package, which
/// owns every example file, each adapter example behind the feature it needs.
#[test]
fn every_example_is_the_examples_packages_with_the_feature_it_needs() {
    let root_manifest = manifest("Cargo.toml");
    assert_eq!(
        root_manifest["package"]["autoexamples"].as_bool(),
        Some(false),
        "the suite package builds no example"
    );
    let members: Vec<&str> = root_manifest["workspace"]["default-members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(members.contains(&"examples"), "{members:?}");
    let examples = manifest("examples/Cargo.toml");
    let deps = examples["dependencies"].as_table().unwrap();
    for heavy in ["criterion", "proptest", "trybuild", "dhat", "opentelemetry"] {
        assert!(
            !deps.contains_key(heavy),
            "the quick start does not build {heavy}"
        );
    }
    assert!(!examples.contains_key("dev-dependencies"));
    let features = examples["features"].as_table().unwrap();
    let listed = examples["example"].as_array().unwrap();
    for file in std::fs::read_dir(root().join("examples")).unwrap() {
        let file = file.unwrap().path();
        if file.extension().is_some_and(|e| e == "rs") {
            let name = file.file_stem().unwrap().to_str().unwrap();
            let entry = listed
                .iter()
                .find(|e| e["name"].as_str() == Some(name))
                .unwrap_or_else(|| panic!("examples/{name}.rs has an [[example]] entry"));
            assert_eq!(entry["path"].as_str(), Some(format!("{name}.rs").as_str()));
            let header = read(format!("examples/{name}.rs"));
            for f in entry
                .get("required-features")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let f = f.as_str().unwrap();
                assert!(features.contains_key(f), "feature `{f}` of {name}");
                assert!(
                    header.contains(&format!("--features {f}")),
                    "examples/{name}.rs says to run it with `--features {f}`"
                );
            }
        }
    }
}

#[test]
fn the_readme_is_a_short_front_page_that_says_how_to_run_everything() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 250, "the README front page has {lines} lines");
    for must in [
        "cargo run --example quickstart",
        "cargo test --workspace --all-features",
        ".ci/run",
    ] {
        assert!(readme.contains(must), "the README says `{must}`");
    }
    // Every example command it gives names the feature its example needs.
    let examples = manifest("examples/Cargo.toml");
    for entry in examples["example"].as_array().unwrap() {
        let name = entry["name"].as_str().unwrap();
        for cmd in readme.match_indices(&format!("--example {name}")) {
            let line_start = readme[..cmd.0].rfind('\n').map_or(0, |i| i + 1);
            let line = &readme[line_start..cmd.0];
            for f in entry
                .get("required-features")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let f = f.as_str().unwrap();
                assert!(
                    line.contains(&format!("--features {f}")),
                    "`{line}--example {name}` needs `--features {f}`"
                );
            }
        }
    }
}

/// "Who approves when my server is a headless stdio process started by a desktop
/// client?" has one answer, in the guide's confirmation chapter: a recipe per
/// situation and the clients that support elicitation. The README and the MCP
/// chapter point there instead of answering again.
#[test]
fn who_approves_is_answered_in_one_place() {
    let chapter = read("toolmark/guide/confirmation.md");
    let at = chapter
        .find("\n## Who approves? One recipe per situation\n")
        .expect("the confirmation chapter has the section");
    let section = &chapter[at..];
    for recipe in ["**A.", "**B.", "**C.", "**D.", "**E."] {
        assert!(section.contains(recipe), "recipe {recipe}");
    }
    for situation in [
        "headless stdio MCP server",
        "ConfirmQueue",
        "elicitation",
        "Policies",
    ] {
        assert!(section.contains(situation), "{situation}");
    }
    assert!(
        section.contains("| client | elicitation |"),
        "the clients table"
    );
    // The URL-mode paragraph is marked for the coordinator to complete.
    assert!(section.contains("Your app's own approval page, reached by URL"));

    let anchor = "who-approves-one-recipe-per-situation";
    assert!(
        read("README.md").contains(anchor),
        "the README links the answer"
    );
    assert!(
        read("toolmark/guide/mcp.md").contains(anchor),
        "the MCP chapter links the answer"
    );
    for other in ["mcp", "agents", "tools", "security", "scopes", "instances"] {
        let text = read(format!("toolmark/guide/{other}.md"));
        assert!(
            !text.contains("| client | elicitation |"),
            "{other}.md repeats the clients table: keep it in one place"
        );
    }
}

/// Whether `rel` (a path inside a crate) is one of the crate's `include` patterns
/// (the forms its manifests use: `dir/**/*.ext`, `dir/*.ext`, a plain path).
fn included(patterns: &[&str], rel: &str) -> bool {
    patterns.iter().any(|p| {
        if let Some((dir, ext)) = p.split_once("/**/*") {
            rel.starts_with(&format!("{dir}/")) && rel.ends_with(ext)
        } else if let Some((dir, ext)) = p.split_once("/*") {
            rel.strip_prefix(&format!("{dir}/"))
                .is_some_and(|name| !name.contains('/') && name.ends_with(ext))
        } else {
            *p == rel
        }
    })
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every file a published crate's code includes (`include_str!`, `include_bytes!`:
/// the WebMCP page script, the guide's chapters) is in its package, so the crate
/// builds from the registry with every feature (`cargo package` builds only the
/// default ones).
#[test]
fn every_file_the_code_includes_is_packaged() {
    for krate in ["toolmark", "toolmark-macros", "toolmark-syntax"] {
        let package = manifest(&format!("{krate}/Cargo.toml"))["package"].clone();
        let patterns: Vec<&str> = package["include"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let base = root().join(krate);
        let mut files = Vec::new();
        rust_files(&base.join("src"), &mut files);
        let mut checked = 0;
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for macro_name in ["include_str!(\"", "include_bytes!(\""] {
                for (at, _) in text.match_indices(macro_name) {
                    let rest = &text[at + macro_name.len()..];
                    let target = &rest[..rest.find('"').unwrap()];
                    let path = file.parent().unwrap().join(target);
                    let path = std::fs::canonicalize(&path)
                        .unwrap_or_else(|e| panic!("{}: {target}: {e}", file.display()));
                    let rel = path
                        .strip_prefix(std::fs::canonicalize(&base).unwrap())
                        .unwrap_or_else(|_| panic!("{target} is outside {krate}"))
                        .to_string_lossy()
                        .replace('\\', "/");
                    assert!(
                        included(&patterns, &rel),
                        "{krate} includes {rel} in its code but not in its package: {patterns:?}"
                    );
                    checked += 1;
                }
            }
        }
        if krate == "toolmark" {
            assert!(
                checked > 1,
                "the guide's chapters and the WebMCP script are checked"
            );
        }
    }
}
