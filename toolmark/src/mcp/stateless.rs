//! MCP 2026-07-28, the stateless revision: which revision a request speaks,
//! `subscriptions/listen` for `notifications/tools/list_changed`, and the cache
//! hints of `tools/list`.
//!
//! rmcp does the protocol work (discover, per-request `_meta`, the version
//! check, 405 on GET/DELETE, `Mcp-Method`/`Mcp-Name` against the body); this
//! file only answers what Toolmark decides.

use std::sync::Arc;

use rmcp::model::{CacheScope, ListToolsResult, ProtocolVersion, SubscriptionFilter};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::RoleServer;

use super::list::{settled_change, Catalog, Listing};
use super::Elicitation;

/// Whether `context` is a request of the 2026-07-28 revision (or later): no
/// session, everything in the request's `_meta`.
pub(crate) fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The part of a `subscriptions/listen` filter this server serves: the tool
/// list's changes (it has no prompts or resources of its own).
pub(crate) fn accepted(requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
    let mut accepted = SubscriptionFilter::new();
    if requested.tools_list_changed == Some(true) {
        accepted.tools_list_changed = Some(true);
    }
    Some(accepted)
}

/// Serve one `subscriptions/listen` stream until the client cancels it: one
/// `notifications/tools/list_changed` per settled change of what the `Mcp`
/// caller sees (a burst of changes is one notification, as for sessions),
/// measured from `from` (what the caller saw when the stream was accepted,
/// before rmcp acknowledged it; `None`: now).
pub(crate) async fn listen(
    catalog: Arc<Catalog>,
    policy: Option<Elicitation>,
    subscription: SubscriptionContext,
    from: Option<Arc<Listing>>,
) {
    if subscription.accepted().tools_list_changed != Some(true) {
        subscription.cancelled().await;
        return;
    }
    // Subscribed before the first comparison: a change after it is an event,
    // one before it is seen by the comparison.
    let mut events = catalog.tm.events();
    let mut sent = from.unwrap_or_else(|| catalog.listing(policy.as_ref()));
    let cancelled = subscription.cancelled();
    tokio::pin!(cancelled);
    // The first pass compares without waiting: the client had the
    // acknowledgment before `events` was subscribed.
    let mut first = true;
    while std::mem::take(&mut first) || settled_change(&mut events, cancelled.as_mut()).await {
        let now = catalog.listing(policy.as_ref());
        if now.same_tools(&sent) {
            continue;
        }
        sent = now;
        if subscription
            .sink()
            .notify_tool_list_changed()
            .await
            .is_err()
        {
            return;
        }
    }
}

/// The cache hints of a 2026-07-28 `tools/list` page: fresh for `ttl_ms`, and
/// for this client only (what a client sees can depend on who it is).
pub(crate) fn cache_hints(result: &mut ListToolsResult, ttl_ms: u64) {
    result.ttl_ms = Some(ttl_ms);
    result.cache_scope = Some(CacheScope::Private);
}
