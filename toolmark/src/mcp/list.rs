//! tools/list: the `Mcp` manifest as rmcp tools, built once per manifest version,
//! and the coalesced `notifications/tools/list_changed` to every session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{JsonObject, Tool};
use rmcp::service::Peer;
use rmcp::RoleServer;
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::event::Event;
use crate::sync::lock;
use crate::{Caller, Effect, ToolInfo, Toolmark};

/// How long the watcher waits after a change for more before notifying.
pub(crate) const COALESCE: Duration = Duration::from_millis(20);

/// One tool as the server sees it when a call comes in.
#[derive(Clone, Debug)]
pub(crate) struct Known {
    pub(crate) effect: Effect,
    /// Whether outputs are wrapped as `{"result": …}` (the output schema is not an
    /// object schema).
    pub(crate) wrap: bool,
}

/// The tools of one manifest version.
pub(crate) struct Listing {
    pub(crate) version: u64,
    pub(crate) tools: Arc<Vec<Tool>>,
    pub(crate) known: HashMap<String, Known>,
}

/// A Toolmark's MCP view: its listing (cached per manifest version) and the
/// sessions to notify when it changes.
pub(crate) struct Catalog {
    pub(crate) tm: Toolmark,
    listing: Mutex<Option<Arc<Listing>>>,
    peers: Mutex<Vec<Peer<RoleServer>>>,
    watching: std::sync::Once,
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
}

impl Catalog {
    pub(crate) fn new(tm: Toolmark) -> Arc<Self> {
        let stop = CancellationToken::new();
        Arc::new(Catalog {
            tm,
            listing: Mutex::new(None),
            peers: Mutex::new(Vec::new()),
            watching: std::sync::Once::new(),
            _stop_on_drop: stop.clone().drop_guard(),
            stop,
        })
    }

    /// The current listing: rebuilt only when the manifest version moved.
    pub(crate) fn listing(&self) -> Arc<Listing> {
        let version = self.tm.manifest_version();
        if let Some(l) = lock(&self.listing).as_ref() {
            if l.version == version {
                return Arc::clone(l);
            }
        }
        let manifest = self.tm.manifest(Caller::Mcp);
        let mut known = HashMap::with_capacity(manifest.len());
        let tools: Vec<Tool> = manifest
            .iter()
            .map(|info| {
                let (tool, wrap) = to_tool(info);
                known.insert(
                    info.name.clone(),
                    Known {
                        effect: info.effect,
                        wrap,
                    },
                );
                tool
            })
            .collect();
        let listing = Arc::new(Listing {
            version,
            tools: Arc::new(tools),
            known,
        });
        *lock(&self.listing) = Some(Arc::clone(&listing));
        listing
    }

    /// Notify `peer` of list changes from now on (until its transport closes).
    pub(crate) fn add_peer(self: &Arc<Self>, peer: Peer<RoleServer>) {
        {
            let mut peers = lock(&self.peers);
            peers.retain(|p| !p.is_transport_closed());
            peers.push(peer);
        }
        self.watching.call_once(|| {
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(watch(
                    Arc::downgrade(self),
                    self.tm.events(),
                    self.stop.clone(),
                    self.listing().tools.clone(),
                ));
            }
        });
    }

    fn live_peers(&self) -> Vec<Peer<RoleServer>> {
        let mut peers = lock(&self.peers);
        peers.retain(|p| !p.is_transport_closed());
        peers.clone()
    }
}

/// Waits for manifest changes, lets a burst settle, and sends one
/// `list_changed` per settled change of what `Mcp` sees.
async fn watch(
    catalog: Weak<Catalog>,
    mut events: crate::Events,
    stop: CancellationToken,
    mut sent: Arc<Vec<Tool>>,
) {
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            e = events.recv() => e,
        };
        match event {
            Ok(Event::ManifestChanged) | Err(RecvError::Lagged(_)) => {}
            Ok(_) => continue,
            Err(RecvError::Closed) => return,
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(COALESCE) => {}
        }
        while events.try_recv().is_ok() {}
        let Some(catalog) = catalog.upgrade() else {
            return;
        };
        let now = catalog.listing().tools.clone();
        if now == sent {
            continue;
        }
        sent = now;
        for peer in catalog.live_peers() {
            // A session that went away meanwhile is pruned next time.
            let _ = peer.notify_tool_list_changed().await;
        }
    }
}

/// A manifest entry as an rmcp tool, and whether its outputs are wrapped.
fn to_tool(info: &ToolInfo) -> (Tool, bool) {
    let input = match info.input_schema.as_ref() {
        Value::Object(o) => o.clone(),
        _ => JsonObject::from_iter([("type".to_owned(), json!("object"))]),
    };
    let mut tool = Tool::new(info.name.clone(), info.description.clone(), input)
        .with_annotations(super::annotations(info.effect, info.title.as_deref()));
    if let Some(t) = &info.title {
        tool = tool.with_title(t.clone());
    }
    let mut wrap = false;
    if let Some(schema) = &info.output_schema {
        let (schema, wrapped) = output_schema(schema);
        wrap = wrapped;
        tool = tool.with_raw_output_schema(Arc::new(schema));
    }
    (tool, wrap)
}

/// An output schema as MCP wants it (an object schema): a non-object schema is
/// wrapped as `{"result": …}`, its `$defs` kept at the root.
pub(crate) fn output_schema(schema: &Value) -> (JsonObject, bool) {
    let mut inner = match schema {
        Value::Object(o) => o.clone(),
        Value::Bool(true) => JsonObject::new(),
        _ => JsonObject::new(),
    };
    if inner.get("type") == Some(&json!("object")) {
        return (inner, false);
    }
    let mut outer = JsonObject::new();
    for key in ["$schema", "$defs", "definitions"] {
        if let Some(v) = inner.remove(key) {
            outer.insert(key.to_owned(), v);
        }
    }
    outer.insert("type".to_owned(), json!("object"));
    outer.insert("properties".to_owned(), json!({ "result": inner }));
    outer.insert("required".to_owned(), json!(["result"]));
    (outer, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_output_schemas_are_kept_and_others_wrapped_with_defs_at_the_root() {
        let obj = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        assert_eq!(
            output_schema(&obj),
            (obj.as_object().unwrap().clone(), false)
        );
        let (s, wrapped) = output_schema(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "array", "items": {"$ref": "#/$defs/A"},
            "$defs": {"A": {"type": "string"}}
        }));
        assert!(wrapped);
        assert_eq!(
            Value::Object(s),
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$defs": {"A": {"type": "string"}},
                "type": "object",
                "properties": {"result": {"type": "array", "items": {"$ref": "#/$defs/A"}}},
                "required": ["result"]
            })
        );
    }
}
