//! The tools a page registers: the `WebMcp` manifest as WebMCP tool
//! descriptors, built once per manifest version, with browser-safe names.

use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use crate::agent::names::{NameMap, Target};
use crate::sync::lock;
use crate::{Caller, Effect, ToolInfo, Toolmark};

/// The tools of one manifest version, in both views a page can have.
pub(crate) struct Listing {
    pub(crate) version: u64,
    /// Browser names ⇄ full names, over every tool a page with `onConfirm` sees.
    pub(crate) names: NameMap,
    /// The `tools` message for a page with `onConfirm` (JSON, ready to send).
    pub(crate) with_confirm: Arc<str>,
    /// The `tools` message for a page without one.
    pub(crate) without_confirm: Arc<str>,
    /// Full names a page without `onConfirm` does not get (guarded tools with
    /// no other confirmation path).
    pub(crate) hidden: Vec<String>,
}

/// A Toolmark's WebMCP listing, rebuilt only when the manifest version moved.
pub(crate) struct Catalog {
    pub(crate) tm: Toolmark,
    listing: Mutex<Option<Arc<Listing>>>,
    /// Every browser name given so far: a name keeps its tool across manifest
    /// versions (a page that registered it under an older list reaches that tool
    /// or none, never another), and only a newcomer gets a new name.
    book: Mutex<NameMap>,
}

impl Catalog {
    pub(crate) fn new(tm: Toolmark) -> Self {
        Catalog {
            tm,
            listing: Mutex::new(None),
            book: Mutex::new(NameMap::default()),
        }
    }

    pub(crate) fn listing(&self) -> Arc<Listing> {
        let version = self.tm.manifest_version();
        if let Some(l) = lock(&self.listing).as_ref()
            && l.version == version
        {
            return Arc::clone(l);
        }
        let listing = Arc::new(build(&self.tm, version, &mut lock(&self.book)));
        *lock(&self.listing) = Some(Arc::clone(&listing));
        listing
    }
}

fn build(tm: &Toolmark, version: u64, book: &mut NameMap) -> Listing {
    // With its own confirm handler a page sees every visible tool it is
    // allowed; without, what the app's confirmation paths allow (its handler,
    // or a policy that decides without asking).
    let all = tm.inner.manifest_with_handler(Caller::WebMcp);
    let plain = tm.manifest_shared(Caller::WebMcp);
    let names = NameMap::assign(Target::WebMcp, all.iter().map(|t| t.name.as_str()), book);
    let describe = |infos: &mut dyn Iterator<Item = &ToolInfo>| -> Vec<Value> {
        infos
            .map(|info| descriptor(info, names.to_provider(&info.name).unwrap_or(&info.name)))
            .collect()
    };
    let hidden: Vec<String> = all
        .iter()
        .filter(|t| !plain.iter().any(|p| p.name == t.name))
        .map(|t| t.name.clone())
        .collect();
    let with_confirm = json!({
        "version": version,
        "confirm": true,
        "tools": describe(&mut all.iter()),
        "hidden": [],
    });
    let without_confirm = json!({
        "version": version,
        "confirm": false,
        "tools": describe(&mut plain.iter()),
        "hidden": hidden,
    });
    Listing {
        version,
        names,
        with_confirm: with_confirm.to_string().into(),
        without_confirm: without_confirm.to_string().into(),
        hidden,
    }
}

/// One tool as `registerTool` takes it (without `execute`, which the shim adds).
fn descriptor(info: &ToolInfo, name: &str) -> Value {
    let mut d = json!({
        "name": name,
        "toolmarkName": info.name,
        "description": info.description,
        "inputSchema": info.input_schema.as_ref(),
        "annotations": annotations(info),
    });
    if let Some(title) = &info.title {
        d["title"] = json!(title);
    }
    d
}

/// The WebMCP annotations of a tool, in one place: every hint of its
/// [`ToolAnnotations`](crate::ToolAnnotations) as Toolmark names it (so a new
/// hint flows through), plus the three Chromium reads —
/// `readOnlyHint` (effect read), `consequentialHint` (consequential or
/// destructive: Chromium ignores `destructiveHint`) and `untrustedContentHint`
/// (open-world).
pub(crate) fn annotations(info: &ToolInfo) -> Value {
    let mut out = match serde_json::to_value(&info.annotations) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let flag = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_bool) == Some(true);
    let read_only = info.effect == Effect::Read || flag(&out, "readOnlyHint");
    let consequential = info.effect.needs_confirmation() || flag(&out, "destructiveHint");
    let open_world = flag(&out, "openWorldHint");
    out.insert("readOnlyHint".into(), json!(read_only));
    out.insert("consequentialHint".into(), json!(consequential));
    out.insert("untrustedContentHint".into(), json!(open_world));
    if let Some(title) = &info.title {
        out.entry("title").or_insert_with(|| json!(title));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolAnnotations;

    fn info(effect: Effect) -> ToolInfo {
        ToolInfo {
            name: "a.b".into(),
            title: None,
            description: "d".into(),
            input_schema: Arc::new(json!({"type": "object"})),
            output_schema: None,
            effect,
            annotations: ToolAnnotations {
                read_only_hint: effect == Effect::Read,
                destructive_hint: effect == Effect::Destructive,
                open_world_hint: effect.open_world(),
                idempotent_hint: effect.idempotent(),
            },
            needs_confirmation: effect.needs_confirmation(),
        }
    }

    #[test]
    fn effects_map_onto_the_hints_chromium_reads() {
        let rows = [
            (Effect::Read, true, false),
            (Effect::Write, false, false),
            (Effect::Consequential, false, true),
            (Effect::Destructive, false, true),
        ];
        for (effect, read_only, consequential) in rows {
            let a = annotations(&info(effect));
            assert_eq!(a["readOnlyHint"], json!(read_only), "{effect:?}");
            assert_eq!(a["consequentialHint"], json!(consequential), "{effect:?}");
            // Open-world tools (by default the consequential ones) may return
            // what the world wrote.
            assert_eq!(
                a["untrustedContentHint"],
                json!(effect.open_world()),
                "{effect:?}"
            );
            // Toolmark's own hints are kept beside them.
            assert_eq!(
                a["destructiveHint"],
                json!(effect == Effect::Destructive),
                "{effect:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_browser_name_keeps_its_tool_when_a_newcomer_would_take_it() {
        let tm = Toolmark::builder().build().unwrap();
        let read = |name: &str| {
            crate::ToolSpec::new(name, "A tool")
                .effect(Effect::Read)
                .handler(|_ctx, input| async move { Ok(input) })
        };
        let scope = "s".repeat(200);
        tm.scope(&scope).register(read("tool")).unwrap();
        let long = format!("{scope}.tool");
        let catalog = Catalog::new(tm.clone());
        let first = catalog.listing();
        let shown = first.names.to_provider(&long).unwrap().to_owned();
        assert_eq!(shown.len(), 128);
        // A tool registered later under exactly the name the page was shown.
        tm.register(read(&shown), Default::default()).unwrap();
        let second = catalog.listing();
        assert!(second.version > first.version);
        // The page's name still reaches the tool it was shown for, never the newcomer.
        assert_eq!(second.names.to_toolmark(&shown), Some(long.as_str()));
        let newcomer = second.names.to_provider(&shown).unwrap();
        assert_ne!(newcomer, shown);
        assert_eq!(second.names.to_toolmark(newcomer), Some(shown.as_str()));
    }
}
