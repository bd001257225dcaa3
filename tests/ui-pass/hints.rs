//! `open_world`, `closed_world` and `idempotent` compile and reach the manifest.

use toolmark::{tool, Caller, Toolmark};

/// Fetch a page from the web.
#[tool(scope = "hints", read_only, open_world)]
async fn fetch(url: String) -> String {
    url
}

/// Set the theme.
#[tool(scope = "hints", idempotent)]
async fn set_theme(dark: bool) -> bool {
    dark
}

/// Send an internal notice.
#[tool(scope = "hints", consequential, closed_world)]
async fn notice(text: String) -> String {
    text
}

fn main() {
    let tm = Toolmark::builder().build().unwrap();
    tm.register_collected().unwrap();
    let m = tm.manifest(Caller::Human);
    let hints = |name: &str| {
        let t = m.iter().find(|t| t.name == name).unwrap();
        (t.annotations.open_world_hint, t.annotations.idempotent_hint)
    };
    assert_eq!(hints("hints.fetch"), (true, true));
    assert_eq!(hints("hints.set_theme"), (false, true));
    assert_eq!(hints("hints.notice"), (false, false));
}
