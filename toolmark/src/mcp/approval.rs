//! Approval by the person, on the app's own page (URL-mode elicitation).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::{header, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::tasks::{MemoryTaskStore, TaskStore};
use super::{Elicitation, McpServer};
use crate::confirm::policy::Approver;
use crate::store::{Purpose, Sealer};
use crate::{Decision, Toolmark};

type Identify = dyn Fn(&http::request::Parts) -> Option<String> + Send + Sync;

/// Confirmation by the person on the app's own approval page, for a 2026-07-28
/// client ([`McpServer::approve_on_page`]).
///
/// A call this covers is a pending confirmation; the client is asked (a
/// URL-mode elicitation, inside a multi round-trip request or a task) to open
/// `url?token=…`. The token is a one-time handle of that confirmation, sealed
/// (it opens only under the toolmark's seal key, and only until the
/// confirmation expires). The page is the app's: it reads what to show with
/// `GET <approval router>?token=…` (the summary, the changes and the input,
/// redacted) and posts the person's decision to the same route
/// (`{"token", "approved", "reason"?}` as `application/json`, from the page's own
/// origin: a decision posted in another form (415) or from another site, as the
/// browser's `Origin` and `Sec-Fetch-Site` say (403), is refused, so a page
/// elsewhere cannot post the link's token with the person's cookies). The client never sees the form and
/// cannot answer it: when the client retries (or updates its task), the
/// decision the page recorded is applied, once; until there is one the client
/// is asked again. A client may still decline, which rejects the call.
///
/// **Who approved**: with [`identify`](Self::identify), the app names the
/// signed-in person from the page's request (its own login), and the decision is
/// recorded as theirs ([`Approver::User`](crate::Approver::User)), which is what a
/// `Rule::require_person` policy asks for. Without it, whoever holds the URL
/// decides (the client received it too, to show it), and the decision is the
/// app's ([`Approver::App`](crate::Approver::App)), not a person's.
#[derive(Clone)]
pub struct ApprovalPage {
    pub(crate) url: String,
    pub(crate) policy: Elicitation,
    pub(crate) identify: Option<Arc<Identify>>,
    /// Decisions waiting for the client's retry, when the server keeps no
    /// tasks (else the task store keeps them).
    pub(crate) own: Arc<MemoryTaskStore>,
}

impl fmt::Debug for ApprovalPage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalPage")
            .field("url", &self.url)
            .field("policy", &self.policy)
            .field("identify", &self.identify.is_some())
            .finish()
    }
}

impl ApprovalPage {
    /// The page at `url` (absolute, as the person's browser reaches it) approves
    /// the calls `policy` covers.
    pub fn new(url: impl Into<String>, policy: Elicitation) -> Self {
        ApprovalPage {
            url: url.into(),
            policy,
            identify: None,
            own: Arc::new(MemoryTaskStore::new()),
        }
    }

    /// Name the person who decides from the page's request (the app's own
    /// login: a session cookie, a header its proxy sets). `None` refuses the
    /// decision (401): the page should send the person to sign in.
    #[must_use]
    pub fn identify(
        mut self,
        f: impl Fn(&http::request::Parts) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.identify = Some(Arc::new(f));
        self
    }
}

/// What the token seals.
#[derive(Serialize, Deserialize)]
struct Token {
    id: String,
    exp: u64,
}

/// A recorded decision, as stored (sealed).
#[derive(Serialize, Deserialize)]
pub(crate) struct Recorded {
    pub(crate) approved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) by: Option<String>,
}

impl Recorded {
    pub(crate) fn decision(self) -> (Decision, Approver) {
        let approver = match &self.by {
            Some(id) => Approver::User { id: id.clone() },
            None => Approver::App,
        };
        let decision =
            if self.approved {
                Decision::approve()
            } else {
                Decision::reject_with(self.reason.unwrap_or_else(|| {
                    "The user rejected the call on the approval page".to_owned()
                }))
            };
        (decision, approver)
    }
}

fn decision_key(id: &str) -> String {
    format!("approval:{id}")
}

/// The one-time page token for the confirmation `id`.
pub(crate) fn token(sealer: &Sealer, id: &str, exp: u64) -> Option<String> {
    let plain = serde_json::to_vec(&Token {
        id: id.to_owned(),
        exp,
    })
    .ok()?;
    sealer.seal(Purpose::ApprovalToken, "", &plain)
}

fn open_token(sealer: &Sealer, text: &str, now_ms: u64) -> Option<Token> {
    let t: Token = serde_json::from_slice(&sealer.open(Purpose::ApprovalToken, "", text)?).ok()?;
    (now_ms < t.exp).then_some(t)
}

/// The page's URL for the confirmation `id`.
pub(crate) fn page_url(page: &ApprovalPage, sealer: &Sealer, id: &str, exp: u64) -> Option<String> {
    let t = token(sealer, id, exp)?;
    let sep = if page.url.contains('?') { '&' } else { '?' };
    Some(format!("{}{sep}token={t}", page.url))
}

/// The decision the page recorded for `id`, if any (taken: applied once).
pub(crate) async fn recorded(store: &dyn TaskStore, sealer: &Sealer, id: &str) -> Option<Recorded> {
    let key = decision_key(id);
    let text = store.get(&key).await.ok()??;
    let plain = sealer.open(Purpose::ApprovalDecision, &key, &text)?;
    serde_json::from_slice(&plain).ok()
}

#[derive(Clone)]
struct PageState {
    tm: Toolmark,
    page: ApprovalPage,
    sealer: Sealer,
    store: Arc<dyn TaskStore>,
}

/// The `token` parameter of a query string (percent-decoded).
fn token_param(query: Option<&str>) -> Option<String> {
    let raw = query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))?;
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn json_response(code: StatusCode, value: &serde_json::Value) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

#[derive(Deserialize)]
struct Posted {
    token: String,
    approved: bool,
    #[serde(default)]
    reason: Option<String>,
}

fn status(code: StatusCode, message: &str) -> Response {
    json_response(code, &json!({ "error": message }))
}

async fn show(State(s): State<PageState>, uri: http::Uri) -> Response {
    let now = crate::store::to_ms(s.tm.inner.now());
    let Some(t) = token_param(uri.query()).and_then(|q| open_token(&s.sealer, &q, now)) else {
        return status(
            StatusCode::NOT_FOUND,
            "This approval link is not valid (any more)",
        );
    };
    match s.tm.pending_by_id(&t.id).await {
        Ok(Some(p)) => json_response(
            StatusCode::OK,
            &json!({
                "tool": p.tool,
                "summary": p.summary,
                "changes": p.changes,
                "input": p.input,
                "expiresAt": humantime::format_rfc3339_millis(p.expires_at).to_string(),
                "decided": recorded(s.store.as_ref(), &s.sealer, &t.id).await.is_some(),
            }),
        ),
        Ok(None) => status(
            StatusCode::GONE,
            "This confirmation was answered or has expired",
        ),
        Err(e) => status(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
}

/// The origin (`scheme://host[:port]`, lower case) of an absolute URL.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    (!scheme.is_empty() && !authority.is_empty())
        .then(|| format!("{scheme}://{authority}").to_ascii_lowercase())
}

/// Why a decision was not sent by the page itself (cross-site request forgery: a
/// page elsewhere posting the link's token with the person's cookies), if so. A
/// decision is JSON (a cross-site form or a `text/plain` post is refused, and a
/// cross-site `fetch` with JSON needs a preflight this router never grants), and
/// whatever the browser says of where it comes from (`Origin`,
/// `Sec-Fetch-Site`) must be the page's own origin.
fn cross_site(
    page: &ApprovalPage,
    parts: &http::request::Parts,
) -> Option<(StatusCode, &'static str)> {
    let header = |name: header::HeaderName| {
        parts
            .headers
            .get(name)
            .map(|v| v.to_str().unwrap_or("\u{fffd}").trim().to_ascii_lowercase())
    };
    let json = header(header::CONTENT_TYPE)
        .is_some_and(|ct| ct.split(';').next().map(str::trim) == Some("application/json"));
    if !json {
        return Some((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Send the decision as application/json",
        ));
    }
    if let Some(site) = header(header::HeaderName::from_static("sec-fetch-site"))
        && site != "same-origin"
        && site != "none"
    {
        return Some((StatusCode::FORBIDDEN, "Decide on the approval page itself"));
    }
    if let Some(origin) = header(header::ORIGIN)
        && origin_of(&page.url).as_deref() != Some(origin.as_str())
    {
        return Some((StatusCode::FORBIDDEN, "Decide on the approval page itself"));
    }
    None
}

async fn decide(State(s): State<PageState>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Some((code, why)) = cross_site(&s.page, &parts) {
        return status(code, why);
    }
    let by = match &s.page.identify {
        Some(f) => match f(&parts) {
            Some(id) => Some(id),
            None => return status(StatusCode::UNAUTHORIZED, "Sign in to approve"),
        },
        None => None,
    };
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return status(StatusCode::PAYLOAD_TOO_LARGE, "The decision is too large");
    };
    let Ok(posted) = serde_json::from_slice::<Posted>(&bytes) else {
        return status(
            StatusCode::BAD_REQUEST,
            "Send {\"token\", \"approved\", \"reason\"?}",
        );
    };
    let now = crate::store::to_ms(s.tm.inner.now());
    let Some(t) = open_token(&s.sealer, &posted.token, now) else {
        return status(
            StatusCode::NOT_FOUND,
            "This approval link is not valid (any more)",
        );
    };
    match s.tm.pending_by_id(&t.id).await {
        Ok(Some(_)) => {}
        Ok(None) => {
            return status(
                StatusCode::GONE,
                "This confirmation was answered or has expired",
            )
        }
        Err(e) => return status(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
    if recorded(s.store.as_ref(), &s.sealer, &t.id).await.is_some() {
        return status(
            StatusCode::CONFLICT,
            "This confirmation was already decided",
        );
    }
    let record = Recorded {
        approved: posted.approved,
        reason: posted.reason.map(|r| crate::tools::summary::one_line(&r)),
        by,
    };
    let key = decision_key(&t.id);
    let Some(sealed) = serde_json::to_vec(&record)
        .ok()
        .and_then(|plain| s.sealer.seal(Purpose::ApprovalDecision, &key, &plain))
    else {
        return status(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The decision could not be sealed",
        );
    };
    let ttl = Duration::from_millis(t.exp.saturating_sub(now).max(1));
    match s.store.put(&key, sealed, ttl).await {
        Ok(()) => json_response(StatusCode::OK, &json!({ "recorded": true })),
        Err(e) => status(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
}

impl McpServer {
    /// The routes of the approval page's data ([`ApprovalPage`]): `GET
    /// ?token=…` answers what to show (JSON: `tool`, `summary`, `changes`,
    /// `input` redacted, `expiresAt`, `decided`), `POST` with `{"token",
    /// "approved", "reason"?}` records the person's decision. Nest it where the
    /// page's script can reach it; the page itself is the app's. Empty (every
    /// route 404) when the server has no [`ApprovalPage`].
    pub fn approval_router(&self) -> Router {
        let (Some(page), Some(sealer), Source::Shared(tm)) = (
            self.config.approval.clone(),
            self.config.handles.clone(),
            &self.config.source,
        ) else {
            return Router::new();
        };
        let state = PageState {
            tm: tm.clone(),
            store: self.config.decisions(&page),
            page,
            sealer,
        };
        Router::new()
            .route("/", get(show).post(decide))
            .with_state(state)
    }
}

use super::Source;

/// How many times a 2025-11-25 session's client is told to open the page
/// before the call gives up waiting (each time it says it is done while the
/// person has not decided yet).
const LEGACY_ASKS: usize = 20;

/// A 2025-11-25 session: the call is a pending confirmation; the session's
/// client is sent a URL-mode `elicitation/create` (the page's link) while the
/// call waits, and the decision the person recorded on the page is applied.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn legacy(
    tm: &Toolmark,
    page: &ApprovalPage,
    sealer: &Sealer,
    store: Arc<dyn TaskStore>,
    peer: &rmcp::service::Peer<rmcp::RoleServer>,
    name: &str,
    input: serde_json::Value,
    options: crate::CallOptions,
    signal: tokio_util::sync::CancellationToken,
) -> crate::Outcome {
    use crate::{Outcome, RefusalCode};
    use rmcp::model::{ElicitRequestParams, ElicitationAction};
    let outcome = tm.call_deferring(name, input, options).await;
    let Outcome::NeedsConfirmation {
        confirm_id,
        expires_at,
        summary,
        ..
    } = outcome
    else {
        return outcome;
    };
    let exp = crate::store::to_ms(expires_at);
    let id = confirm_id.as_str();
    let give_up = |reason: &'static str| async move {
        let _ = tm.cancel_pending_async(id).await;
        Outcome::refused(RefusalCode::ConfirmationExpired, reason)
    };
    let Some(url) = page_url(page, sealer, &confirm_id, exp) else {
        return give_up("The approval link could not be sealed").await;
    };
    for _ in 0..LEGACY_ASKS {
        let params = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: format!("Open the app's approval page to approve or reject: {summary}"),
            url: url.clone(),
            elicitation_id: confirm_id.clone(),
        };
        let answer = tokio::select! {
            a = peer.create_elicitation(params) => a,
            () = signal.cancelled() => {
                let _ = tm.cancel_pending_async(&confirm_id).await;
                return Outcome::refused(RefusalCode::Cancelled, "The call was cancelled");
            }
        };
        let client = Approver::Client {
            caller: crate::Caller::Mcp,
        };
        match answer {
            Err(e) => {
                tracing::debug!(target: "toolmark::mcp", error = %e, "URL elicitation failed");
                let reject = Decision::reject_with(
                    "The approval could not be asked: the client did not answer the elicitation",
                );
                return tm.answer_by(&confirm_id, reject, client).await;
            }
            Ok(a) if a.action != ElicitationAction::Accept => {
                let reject = Decision::reject_with("The user declined the call in the MCP client");
                return tm.answer_by(&confirm_id, reject, client).await;
            }
            Ok(_) => {
                if let Some(r) = recorded(store.as_ref(), sealer, &confirm_id).await {
                    let (decision, approver) = r.decision();
                    return tm.answer_by(&confirm_id, decision, approver).await;
                }
            }
        }
        if crate::store::to_ms(tm.inner.now()) >= exp {
            break;
        }
    }
    give_up("No decision was made on the approval page in time").await
}
