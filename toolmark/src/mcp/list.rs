//! tools/list: the `Mcp` manifest as rmcp tools, and the coalesced
//! `notifications/tools/list_changed` to every session.
//!
//! Each registered tool's rmcp [`Tool`] is built once (on its first listing) and
//! kept on the tool's own entry; a listing is the visible ones, in the core's
//! sorted order, built once per manifest version: after a change it costs a
//! filter and a reference count per tool, never a schema copy.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{JsonObject, Tool};
use rmcp::service::Peer;
use rmcp::RoleServer;
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::elicit::Elicitation;
use super::result::OutputShape;
use crate::event::Event;
use crate::sync::lock;
use crate::tools::registry::ToolEntry;
use crate::{Caller, ToolInfo, Toolmark};

/// How long the watcher waits after a change for more before notifying.
pub(crate) const COALESCE: Duration = Duration::from_millis(20);

/// One registered tool as MCP lists it, built once per registration.
#[derive(Debug)]
pub(crate) struct McpTool {
    pub(crate) tool: Tool,
    /// How its results are shaped (its output schema).
    pub(crate) shape: OutputShape,
}

impl McpTool {
    /// The MCP form of `entry` (built on first use, then shared).
    pub(crate) fn of(entry: &ToolEntry) -> &Arc<McpTool> {
        entry
            .mcp
            .get_or_init(|| Arc::new(to_tool(&entry.info(Caller::Mcp))))
    }
}

/// The tools of one list, in order.
pub(crate) type Tools = Arc<[Arc<McpTool>]>;

/// The tools of one manifest version.
pub(crate) struct Listing {
    pub(crate) version: u64,
    /// The elicitation policy it was built for.
    policy: Option<Elicitation>,
    /// What a client sees that the server cannot ask to confirm.
    pub(crate) plain: Tools,
    /// What a client sees that the server asks to confirm by elicitation: the
    /// plain list plus the guarded tools only that path confirms (`None`: the
    /// same as `plain`).
    pub(crate) asking: Option<Tools>,
}

impl Listing {
    /// Whether both lists (with and without client confirmation) hold the same
    /// tools as `other`'s.
    pub(crate) fn same_tools(&self, other: &Listing) -> bool {
        same(self.for_client(false), other.for_client(false))
            && same(self.for_client(true), other.for_client(true))
    }

    /// The list for a client that can (`elicits`) or cannot answer elicitations.
    pub(crate) fn for_client(&self, elicits: bool) -> &Tools {
        match (&self.asking, elicits) {
            (Some(asking), true) => asking,
            _ => &self.plain,
        }
    }
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

    /// The current listing for a server confirming by `policy`: rebuilt only
    /// when the manifest version moved.
    pub(crate) fn listing(&self, policy: Option<&Elicitation>) -> Arc<Listing> {
        let version = self.tm.manifest_version();
        if let Some(l) = lock(&self.listing).as_ref()
            && l.version == version
            && l.policy.as_ref() == policy
        {
            return Arc::clone(l);
        }
        let inner = &self.tm.inner;
        let entries = inner.sorted_tools();
        let mut plain = Vec::with_capacity(entries.len());
        let mut asking = Vec::new();
        let mut differs = false;
        for entry in entries.iter() {
            if inner.can_see(entry, Caller::Mcp) {
                let tool = McpTool::of(entry);
                if policy.is_some() {
                    asking.push(Arc::clone(tool));
                }
                plain.push(Arc::clone(tool));
            } else if policy.is_some_and(|p| client_confirms(p, entry)) {
                // Hidden only for want of a confirmation path: this server has
                // one for clients that answer elicitations.
                asking.push(Arc::clone(McpTool::of(entry)));
                differs = true;
            }
        }
        let listing = Arc::new(Listing {
            version,
            policy: policy.cloned(),
            plain: plain.into(),
            asking: differs.then(|| asking.into()),
        });
        *lock(&self.listing) = Some(Arc::clone(&listing));
        listing
    }

    /// Notify `peer` of list changes from now on (until its transport closes).
    pub(crate) fn add_peer(self: &Arc<Self>, peer: Peer<RoleServer>, policy: Option<Elicitation>) {
        {
            let mut peers = lock(&self.peers);
            peers.retain(|p| !p.is_transport_closed());
            peers.push(peer);
        }
        self.watching.call_once(|| {
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                let first = self.listing(policy.as_ref());
                handle.spawn(watch(
                    Arc::downgrade(self),
                    self.tm.events(),
                    self.stop.clone(),
                    policy,
                    first,
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

/// Whether a guarded tool `Mcp` cannot see only for want of a confirmation path
/// is one the server confirms by asking the client (visible, allowed for `Mcp`,
/// covered by `policy`).
pub(crate) fn client_confirms(policy: &Elicitation, entry: &ToolEntry) -> bool {
    entry.guarded()
        && entry.callers.contains(Caller::Mcp)
        && entry.scope.visible()
        && policy.covers(&entry.name, entry.effect)
}

/// Whether two lists hold the same tools (the same registrations, in order).
fn same(a: &Tools, b: &Tools) -> bool {
    a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| Arc::ptr_eq(x, y))
}

/// Waits for the next change of the manifest and lets a burst of changes settle
/// ([`COALESCE`]): `false` when `cancelled` completes or the events end first.
/// Every `list_changed` sender (a 2025-11-25 session's watcher, a 2026-07-28
/// `subscriptions/listen` stream) waits through this.
pub(crate) async fn settled_change<C: std::future::Future<Output = ()>>(
    events: &mut crate::Events,
    mut cancelled: std::pin::Pin<&mut C>,
) -> bool {
    loop {
        let event = tokio::select! {
            () = cancelled.as_mut() => return false,
            e = events.recv() => e,
        };
        match event {
            Ok(Event::ManifestChanged) | Err(RecvError::Lagged(_)) => {}
            Ok(_) => continue,
            Err(RecvError::Closed) => return false,
        }
        tokio::select! {
            () = cancelled.as_mut() => return false,
            () = tokio::time::sleep(COALESCE) => {}
        }
        while events.try_recv().is_ok() {}
        return true;
    }
}

/// Waits for manifest changes, lets a burst settle, and sends one
/// `list_changed` per settled change of what `Mcp` sees.
async fn watch(
    catalog: Weak<Catalog>,
    mut events: crate::Events,
    stop: CancellationToken,
    policy: Option<Elicitation>,
    mut sent: Arc<Listing>,
) {
    let cancelled = stop.cancelled();
    tokio::pin!(cancelled);
    while settled_change(&mut events, cancelled.as_mut()).await {
        let Some(catalog) = catalog.upgrade() else {
            return;
        };
        let now = catalog.listing(policy.as_ref());
        if now.same_tools(&sent) {
            continue;
        }
        sent = now;
        for peer in catalog.live_peers() {
            // A session that went away meanwhile is pruned next time.
            let _ = peer.notify_tool_list_changed().await;
        }
    }
}

/// A manifest entry as an rmcp tool: every annotation set, a title for every
/// tool (the given one, else one made from the name).
fn to_tool(info: &ToolInfo) -> McpTool {
    let input = match info.input_schema.as_ref() {
        Value::Object(o) => o.clone(),
        _ => JsonObject::from_iter([("type".to_owned(), json!("object"))]),
    };
    let title = info
        .title
        .clone()
        .unwrap_or_else(|| default_title(&info.name));
    let mut tool = Tool::new(info.name.clone(), info.description.clone(), input)
        .with_annotations(super::annotations(info, &title))
        .with_title(title);
    let mut shape = OutputShape::Undeclared;
    if let Some(schema) = &info.output_schema {
        let (schema, wrapped) = output_schema(schema);
        shape = if wrapped {
            OutputShape::Wrapped
        } else {
            OutputShape::Object
        };
        tool = tool.with_raw_output_schema(Arc::new(schema));
    }
    McpTool { tool, shape }
}

/// A title made from a full name: the tool's own name in words, then its scope
/// (`billing.send_invoice` → `Send invoice (billing)`).
pub(crate) fn default_title(full: &str) -> String {
    let (scope, name) = match full.rsplit_once('.') {
        Some((scope, name)) => (Some(scope), name),
        None => (None, full),
    };
    let mut title = String::with_capacity(full.len() + 3);
    for (i, c) in name.chars().enumerate() {
        match c {
            '_' | '-' => title.push(' '),
            c if i == 0 => title.extend(c.to_uppercase()),
            c => title.push(c),
        }
    }
    if let Some(scope) = scope {
        title.push_str(" (");
        title.push_str(scope);
        title.push(')');
    }
    title
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
    fn default_titles_read_as_words_with_their_scope() {
        assert_eq!(default_title("ping"), "Ping");
        assert_eq!(
            default_title("billing.send_invoice"),
            "Send invoice (billing)"
        );
        assert_eq!(default_title("a.b.dry-run"), "Dry run (a.b)");
    }

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
