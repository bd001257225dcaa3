//! Confirmation by multi round-trip request (MCP 2026-07-28, SEP-2322).
//!
//! A 2026-07-28 client whose calls [`Elicitation`](super::Elicitation) covers
//! gets, for a call that needs the user's approval, an `input_required` result:
//! one elicitation (`inputRequests.confirm`: the summary, the changes and the
//! input, redacted; approve with accept, reject with decline; a form of the
//! editable fields when the policy allows edits) and a `requestState`. The call
//! itself is a deferred confirmation in the toolmark's pending table or its
//! [`ConfirmStore`](crate::store::ConfirmStore), so the retry may reach any
//! instance that shares the store and the seal key.
//!
//! The `requestState` is a handle, never the confirmation's content: the
//! confirm id and its expiry, sealed whole by the toolmark's one seal (the
//! AES-256-GCM key its store's records are sealed with), with its purpose and the
//! tool's name, the caller (the HTTP `Authorization` the request came with) and
//! the arguments the client sent (canonical JSON) as associated data. A retry opens it only with the
//! same tool, caller and arguments; a changed handle does not open (the
//! JSON-RPC error `-32602`, [`tampered`]); past its
//! expiry (by the toolmark's clock) it is `confirmation_expired`; it is single
//! use because the confirmation is (a replay is `confirmation_expired`); a
//! retry without an answer is asked again and never runs.
//!
//! The approved run has no client to ask: a tool that calls `ctx.elicit` or
//! `ctx.sample` after its confirmation gets `not_supported` at once (a question
//! round there would need a retry that runs the tool without its confirmation,
//! which is used).

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, JsonObject,
};
use rmcp::service::RequestContext;
use rmcp::RoleServer;

use std::sync::Arc;

use super::approval::{self, ApprovalPage};
use super::tasks::TaskStore;
use crate::confirm::policy::Approver;
use crate::store::request_state::{open_handle, seal_handle};
use crate::store::{call_binding, Purpose, Sealer};
use crate::{
    CallOptions, Caller, Decision, Issue, Outcome, PendingConfirmation, Refusal, RefusalCode,
    ToolError, Toolmark,
};

/// The key of the confirmation in `inputRequests` / `inputResponses`.
pub(crate) const CONFIRM_KEY: &str = "confirm";

/// What a call answers a 2026-07-28 client: an outcome, or another round.
pub(crate) enum Reply {
    Outcome(Outcome),
    InputRequired(InputRequiredResult),
    /// The `requestState` does not open for this call: the JSON-RPC error
    /// [`tampered`].
    Tampered,
}

/// Who called, for the handle's binding: the request's `Authorization` header
/// over HTTP (empty over stdio, where the process has one client).
pub(crate) fn principal(context: &RequestContext<RoleServer>) -> String {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.headers.get(http::header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

const TAMPERED: &str = "The requestState does not belong to this call (it was changed, or sent with other arguments or by another caller): call the tool again without it";

/// The answer to a retry whose `requestState` does not open for the call (changed,
/// or sent with other arguments, to another tool or by another caller): a
/// protocol error, `-32602` Invalid params, with Toolmark's refusal (code
/// `invalid`, the issue at `requestState`) as its data. Nothing ran.
pub(crate) fn tampered() -> rmcp::ErrorData {
    let refusal = Refusal::invalid(vec![Issue::new("requestState", TAMPERED)]);
    rmcp::ErrorData::invalid_params(
        format!("Invalid requestState: {TAMPERED}"),
        Some(json!({
            "code": refusal.code.as_str(),
            "message": refusal.message,
            "issues": refusal.issues,
        })),
    )
}

fn expired() -> Outcome {
    Outcome::refused(
        RefusalCode::ConfirmationExpired,
        "No confirmation is pending for this requestState: it was already answered, it expired, or it never existed",
    )
}

/// One call of a tool a 2026-07-28 client may confirm through elicitation.
pub(crate) struct Call<'a> {
    pub(crate) tm: &'a Toolmark,
    pub(crate) sealer: &'a Sealer,
    pub(crate) name: &'a str,
    pub(crate) args: Value,
    pub(crate) principal: String,
    pub(crate) request_state: Option<String>,
    pub(crate) input_responses: Option<InputResponses>,
    /// How the confirmation is asked and answered.
    pub(crate) mode: Mode,
}

/// How a client-side confirmation is asked and answered.
#[derive(Clone)]
pub(crate) enum Mode {
    /// A form elicitation the client's user answers (with the tool's input
    /// schema for the edit form, when edits are allowed).
    Form(Option<Arc<JsonObject>>),
    /// The app's approval page (URL mode): the person decides there; the
    /// decision waits in `store` for the client's retry.
    Page {
        page: ApprovalPage,
        store: Arc<dyn TaskStore>,
    },
}

impl Mode {
    /// The input requests that ask to confirm `pending`: one elicitation under
    /// [`CONFIRM_KEY`]. `None` only when a page token could not be sealed.
    pub(crate) fn asking(
        &self,
        pending: &PendingConfirmation,
        sealer: &Sealer,
    ) -> Option<InputRequests> {
        let params = match self {
            Mode::Form(edit_schema) => {
                let schema = edit_schema
                    .as_deref()
                    .map(|s| edit_form(s, &pending.input))
                    .unwrap_or_else(|| ElicitationSchema::new(Default::default()));
                ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: message(pending),
                    requested_schema: schema,
                }
            }
            Mode::Page { page, .. } => {
                let exp = crate::store::to_ms(pending.expires_at);
                ElicitRequestParams::UrlElicitationParams {
                    meta: None,
                    message: format!(
                        "Open the app's approval page to approve or reject: {}",
                        pending.summary
                    ),
                    url: approval::page_url(page, sealer, &pending.confirm_id, exp)?,
                    elicitation_id: String::new(),
                }
            }
        };
        let mut requests = InputRequests::new();
        requests.insert(
            CONFIRM_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        Some(requests)
    }

    /// The decision the client's `answer` makes (`None`: ask again). A form's
    /// accept approves (with its edits) as the client; on the page, the
    /// person's recorded decision is applied (a client may still decline).
    pub(crate) async fn decide(
        &self,
        sealer: &Sealer,
        pending: &PendingConfirmation,
        answer: Option<&ElicitResult>,
    ) -> Option<(Decision, Approver)> {
        let client = Approver::Client {
            caller: Caller::Mcp,
        };
        match self {
            Mode::Form(edit_schema) => Some((
                decision_of(answer?, pending, edit_schema.as_deref()),
                client,
            )),
            Mode::Page { store, .. } => {
                if let Some(a) = answer.filter(|a| a.action != ElicitationAction::Accept) {
                    return Some((decision_of(a, pending, None), client));
                }
                approval::recorded(store.as_ref(), sealer, &pending.confirm_id)
                    .await
                    .map(approval::Recorded::decision)
            }
        }
    }
}

impl Call<'_> {
    /// Make the call (first round) or answer its confirmation (a retry).
    pub(crate) async fn run(self, options: CallOptions) -> Reply {
        match &self.request_state {
            None => self.first(options).await,
            Some(state) => self.retry(state).await,
        }
    }

    async fn first(&self, options: CallOptions) -> Reply {
        let outcome = self
            .tm
            .call_deferring(self.name, self.args.clone(), options)
            .await;
        let Outcome::NeedsConfirmation {
            confirm_id,
            expires_at,
            ..
        } = &outcome
        else {
            return Reply::Outcome(outcome);
        };
        let exp = crate::store::to_ms(*expires_at);
        let Some(state) = seal_handle(
            self.sealer,
            self.name,
            &self.principal,
            &self.args,
            confirm_id,
            exp,
        ) else {
            return Reply::Outcome(Outcome::Error(ToolError::new(
                "The confirmation could not be sealed",
            )));
        };
        match self.tm.pending_by_id(confirm_id).await {
            Ok(Some(pending)) => self.ask(&pending, state),
            Ok(None) => Reply::Outcome(expired()),
            Err(e) => Reply::Outcome(Outcome::refused(RefusalCode::Unavailable, e.to_string())),
        }
    }

    async fn retry(&self, state: &str) -> Reply {
        let Some(handle) = open_handle(self.sealer, self.name, &self.principal, &self.args, state)
        else {
            return Reply::Tampered;
        };
        if crate::store::to_ms(self.tm.inner.now()) >= handle.exp {
            // Withdraw it now rather than leaving it to the sweeper.
            let _ = self.tm.cancel_pending_async(&handle.id).await;
            return Reply::Outcome(expired());
        }
        let answer = self
            .input_responses
            .as_ref()
            .and_then(|r| r.get(CONFIRM_KEY))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
        let pending = match self.tm.pending_by_id(&handle.id).await {
            Ok(Some(p)) => p,
            Ok(None) => return Reply::Outcome(expired()),
            Err(e) => {
                return Reply::Outcome(Outcome::refused(RefusalCode::Unavailable, e.to_string()))
            }
        };
        match self
            .mode
            .decide(self.sealer, &pending, answer.as_ref())
            .await
        {
            Some((decision, approver)) => {
                Reply::Outcome(self.tm.answer_by(&handle.id, decision, approver).await)
            }
            // No answer (yet): ask again, run nothing.
            None => self.ask(&pending, state.to_owned()),
        }
    }

    /// The `input_required` result asking to confirm `pending`.
    fn ask(&self, pending: &PendingConfirmation, state: String) -> Reply {
        match self.mode.asking(pending, self.sealer) {
            Some(requests) => {
                Reply::InputRequired(InputRequiredResult::new(Some(requests), Some(state)))
            }
            None => Reply::Outcome(Outcome::Error(ToolError::new(
                "The confirmation could not be sealed",
            ))),
        }
    }
}

/// The question: the summary, one line per change and the input, all redacted.
pub(crate) fn message(p: &PendingConfirmation) -> String {
    use std::fmt::Write;
    let mut text = format!("Allow `{}`? {}", p.tool, p.summary);
    for c in &p.changes {
        let show = |v: &Option<Value>| {
            v.as_ref()
                .map_or_else(|| "(none)".to_owned(), ToString::to_string)
        };
        let _ = write!(
            text,
            "\n- {}: {} → {}",
            c.path,
            show(&c.before),
            show(&c.after)
        );
    }
    let _ = write!(text, "\nInput: {}", p.input);
    text
}

/// A form of the input's editable fields (top-level strings, numbers, integers
/// and booleans that are not sensitive), each with its current value.
pub(crate) fn edit_form(input_schema: &JsonObject, shown: &Value) -> ElicitationSchema {
    let mut properties = Map::new();
    if let Some(Value::Object(props)) = input_schema.get("properties") {
        for (name, prop) in props {
            let Some(ty) = prop.get("type").and_then(Value::as_str) else {
                continue;
            };
            if !matches!(ty, "string" | "integer" | "number" | "boolean")
                || prop.get("writeOnly") == Some(&Value::Bool(true))
            {
                continue;
            }
            let mut field = json!({ "type": ty });
            for key in ["title", "description"] {
                if let Some(v) = prop.get(key) {
                    field[key] = v.clone();
                }
            }
            if let Some(v) = shown.get(name).filter(|v| !v.is_null()) {
                field["default"] = v.clone();
            }
            properties.insert(name.clone(), field);
        }
    }
    serde_json::from_value(json!({"type": "object", "properties": properties}))
        .unwrap_or_else(|_| ElicitationSchema::new(Default::default()))
}

/// The decision an elicitation answer makes: accept approves (with the form's
/// edits applied to the input the approver was shown, when edits are allowed: only
/// the fields the form offered, never another key); decline and cancel reject.
fn decision_of(
    answer: &ElicitResult,
    pending: &PendingConfirmation,
    edit_schema: Option<&JsonObject>,
) -> Decision {
    match answer.action {
        ElicitationAction::Accept => {
            let mut decision = Decision::approve();
            if let (Some(schema), Some(Value::Object(fields)), Value::Object(shown)) =
                (edit_schema, &answer.content, &pending.input)
            {
                let offered = serde_json::to_value(edit_form(schema, &pending.input))
                    .ok()
                    .and_then(|f| f.get("properties").and_then(Value::as_object).cloned())
                    .unwrap_or_default();
                let mut edited = shown.clone();
                for (k, v) in fields.iter().filter(|(k, _)| offered.contains_key(*k)) {
                    edited.insert(k.clone(), v.clone());
                }
                if &edited != shown {
                    decision.input = Some(Value::Object(edited));
                }
            }
            decision
        }
        ElicitationAction::Decline => {
            Decision::reject_with("The user declined the call in the MCP client")
        }
        _ => Decision::reject_with("The user cancelled the confirmation"),
    }
}

#[cfg(test)]
mod edits {
    use super::*;

    fn pending(input: Value) -> PendingConfirmation {
        PendingConfirmation {
            confirm_id: "c".into(),
            tool: "pay".into(),
            caller: Caller::Mcp,
            summary: "Pay".into(),
            changes: Vec::new(),
            input,
            expires_at: std::time::SystemTime::UNIX_EPOCH,
        }
    }

    fn accept(content: Value) -> ElicitResult {
        serde_json::from_value(json!({"action": "accept", "content": content})).unwrap()
    }

    #[test]
    fn an_answer_edits_only_the_fields_the_form_offered() {
        let schema: JsonObject = serde_json::from_value(json!({"type": "object", "properties": {
            "to": {"type": "string"},
            "amount": {"type": "integer"},
            "card": {"type": "string", "writeOnly": true},
            "lines": {"type": "array"}
        }}))
        .unwrap();
        let p = pending(json!({"to": "bob", "amount": 5, "card": "[redacted]", "lines": []}));
        let d = decision_of(
            &accept(json!({"to": "eve", "card": "6666", "lines": [1], "admin": true})),
            &p,
            Some(&schema),
        );
        assert_eq!(
            d.input,
            Some(json!({"to": "eve", "amount": 5, "card": "[redacted]", "lines": []}))
        );
        // Only keys the form did not offer: nothing edited.
        let d = decision_of(&accept(json!({"card": "6666"})), &p, Some(&schema));
        assert_eq!(d.input, None);
        // Without edits allowed, an accept approves the input as shown.
        let d = decision_of(&accept(json!({"to": "eve"})), &p, None);
        assert_eq!(d.input, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edit_form_has_the_plain_fields_with_their_values_and_no_secret() {
        let schema = json!({"type": "object", "properties": {
            "to": {"type": "string"}, "amount": {"type": "integer", "minimum": 0},
            "card": {"type": "string", "writeOnly": true},
            "tags": {"type": "array", "items": {"type": "string"}}
        }});
        let form = edit_form(
            schema.as_object().unwrap(),
            &json!({"to": "ada", "amount": 5, "card": "[redacted]", "tags": []}),
        );
        let v = serde_json::to_value(&form).unwrap();
        assert_eq!(v["properties"]["to"]["default"], "ada");
        assert_eq!(v["properties"]["amount"]["default"], 5);
        assert!(v["properties"].get("card").is_none());
        assert!(v["properties"].get("tags").is_none());
    }
}

/// [`ToolContext::elicit`](crate::ToolContext::elicit) and
/// [`ToolContext::sample`](crate::ToolContext::sample) for a 2026-07-28 request:
/// there is no session to send `elicitation/create` or `sampling/createMessage`
/// on, so the question goes back in an `input_required` round and the tool runs
/// again, from the start, with the answers (`inputResponses.elicit-N` or
/// `inputResponses.sample-N`, and the earlier rounds' answers sealed in the
/// `requestState`). A question of a kind the request's `_meta` did not declare
/// (`elicitation` in form mode, `sampling`) is not asked: the tool gets
/// `not_supported`, and when the call then fails the request is answered
/// `-32021` (MissingRequiredClientCapability) naming what it lacked.
///
/// Each round is used once: its `requestState` carries a random id, and the
/// retry that opens it uses the id through the toolmark's
/// [`ConfirmStore`](crate::store::ConfirmStore) (a placeholder record put and
/// taken at once: the take leaves the store's tombstone, and of two racing
/// uses one takes it, on any instance sharing the store), or this process's
/// memory without a store. A replay, after the retry or racing it, is
/// `confirmation_expired` and runs nothing, as a confirmation handle's replay.
///
/// An answer answers exactly the question it was given for: the `requestState`
/// seals the key and the text of the question the round asked, and a retry
/// takes only the response under that key (never one the server did not ask for,
/// never a first call's). Each answer keeps its key and question; a run takes
/// the `n`th answer only for the same question of the same kind (an
/// elicitation's answer is never a sampling result, nor the reverse), else that
/// answer and the later ones are dropped and the question is asked again.
pub(crate) struct Round {
    answers: std::sync::Mutex<Vec<Answer>>,
    next: std::sync::atomic::AtomicUsize,
    /// The question the run asked and had no answer for: its key, the
    /// question and its text.
    asked: std::sync::Mutex<Option<(String, Question, String)>>,
    /// What the request's client declared it answers.
    elicits: bool,
    samples: bool,
    /// The capabilities the run asked for and the client had not declared.
    missing: std::sync::Mutex<rmcp::model::ClientCapabilities>,
    stop: tokio_util::sync::CancellationToken,
}

/// A question a run asked and had no answer for.
// rmcp marks sampling deprecated (SEP-2577, a future revision); 2026-07-28 has it.
#[allow(deprecated)]
enum Question {
    Elicit(crate::ElicitRequest),
    Sample(rmcp::model::CreateMessageRequestParams),
}

/// A client's answer, with the question it answers: its key in
/// `inputRequests` (kind and position) and the question as it was asked.
#[derive(Clone, Serialize, Deserialize)]
struct Answer {
    key: String,
    question: String,
    value: Value,
}

/// The question a round asked: its key and its text.
#[derive(Serialize, Deserialize)]
struct Asked {
    key: String,
    question: String,
}

/// The text an elicitation's answer is bound to.
fn elicit_question(request: &crate::ElicitRequest) -> String {
    json!({"message": request.message, "schema": request.schema}).to_string()
}

/// The text a sampling answer is bound to.
#[allow(deprecated)]
fn sample_question(params: &rmcp::model::CreateMessageRequestParams) -> String {
    serde_json::to_string(params).unwrap_or_default()
}

/// The key of the `n`th question of a run, an elicitation.
fn elicit_key(n: usize) -> String {
    format!("elicit-{n}")
}

/// The key of the `n`th question of a run, a sampling request.
fn sample_key(n: usize) -> String {
    format!("sample-{n}")
}

/// What a question round's `requestState` seals: the answers so far and the
/// question this round asked.
#[derive(Serialize, Deserialize)]
struct Answers {
    /// This round's id (128 random bits): the state is used once.
    id: String,
    answers: Vec<Answer>,
    asked: Asked,
    exp: u64,
}

/// What a retry's client declared it answers (from the request's `_meta`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Answerable {
    /// Form-mode elicitation.
    pub(crate) elicits: bool,
    /// Sampling.
    pub(crate) samples: bool,
}

impl Answerable {
    /// What `caps` (a request's declared client capabilities) answers.
    pub(crate) fn of(caps: Option<&rmcp::model::ClientCapabilities>) -> Self {
        Answerable {
            elicits: caps
                .and_then(|c| c.elicitation.as_ref())
                .is_some_and(|e| e.form.is_some() || e.url.is_none()),
            samples: caps.is_some_and(|c| c.sampling.is_some()),
        }
    }
}

impl Round {
    /// The answers of a retry: the sealed earlier ones, then this round's.
    /// `Err` when the `requestState` does not open for this call (or expired).
    pub(crate) async fn open(
        sealer: &Sealer,
        tm: &Toolmark,
        call: (&str, &str, &Value),
        state: Option<&str>,
        responses: Option<&InputResponses>,
        client: Answerable,
        stop: tokio_util::sync::CancellationToken,
    ) -> Result<Arc<Self>, StateError> {
        let (tool, principal, args) = call;
        // A first call was asked nothing: responses it carries answer nothing.
        let answers = match state {
            None => Vec::new(),
            Some(text) => {
                let plain = sealer
                    .open(
                        Purpose::ElicitState,
                        &call_binding(tool, principal, args),
                        text,
                    )
                    .ok_or(StateError::Tampered)?;
                let a: Answers =
                    serde_json::from_slice(&plain).map_err(|_| StateError::Tampered)?;
                if crate::store::to_ms(tm.inner.now()) >= a.exp {
                    return Err(StateError::Outcome(Outcome::refused(
                        RefusalCode::ConfirmationExpired,
                        "The questions' requestState expired: call the tool again without it",
                    )));
                }
                // Single use, as a confirmation's handle: a replay (after the
                // retry, or racing it) runs nothing.
                match use_once(tm, &a.id, a.exp).await {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(StateError::Outcome(Outcome::refused(
                            RefusalCode::ConfirmationExpired,
                            "The questions' requestState was already used: call the tool again without it",
                        )))
                    }
                    Err(e) => {
                        return Err(StateError::Outcome(Outcome::refused(
                            RefusalCode::Unavailable,
                            e.to_string(),
                        )))
                    }
                }
                let mut answers = a.answers;
                // Only the answer to the question this round asked, under its key.
                if let Some(v) = responses.and_then(|r| r.get(&a.asked.key)) {
                    answers.push(Answer {
                        key: a.asked.key,
                        question: a.asked.question,
                        value: v.clone(),
                    });
                }
                answers
            }
        };
        Ok(Arc::new(Round {
            answers: std::sync::Mutex::new(answers),
            next: std::sync::atomic::AtomicUsize::new(0),
            asked: std::sync::Mutex::new(None),
            elicits: client.elicits,
            samples: client.samples,
            missing: std::sync::Mutex::new(Default::default()),
            stop,
        }))
    }

    /// Whether the run has reached every answer the earlier rounds gave (a
    /// call that may become a task waits for this: its later questions are
    /// the task's).
    pub(crate) fn answered_all(&self) -> bool {
        self.next.load(std::sync::atomic::Ordering::SeqCst)
            >= crate::sync::lock(&self.answers).len()
    }

    /// The capabilities the run needed and the client had not declared, when
    /// `outcome` failed for want of them: the request is then `-32021`.
    pub(crate) fn missing(&self, outcome: &Outcome) -> Option<rmcp::model::ClientCapabilities> {
        let missing = crate::sync::lock(&self.missing).clone();
        let lacked = missing.elicitation.is_some() || missing.sampling.is_some();
        (lacked && matches!(outcome, Outcome::Error(_))).then_some(missing)
    }

    /// The `input_required` round for the question the run asked, if it asked
    /// one it had no answer for.
    // rmcp marks sampling deprecated (SEP-2577, a future revision); 2026-07-28 has it.
    #[allow(deprecated)]
    pub(crate) fn reply(
        &self,
        sealer: &Sealer,
        tm: &Toolmark,
        call: (&str, &str, &Value),
    ) -> Option<Reply> {
        let (key, question, text) = crate::sync::lock(&self.asked).take()?;
        let (tool, principal, args) = call;
        let exp = crate::store::to_ms(tm.inner.now() + tm.inner.config.confirm_expiry);
        let plain = serde_json::to_vec(&Answers {
            id: format!("round-{}", crate::confirm::new_confirm_id()),
            answers: crate::sync::lock(&self.answers).clone(),
            asked: Asked {
                key: key.clone(),
                question: text,
            },
            exp,
        })
        .ok()?;
        let Some(state) = sealer.seal(
            Purpose::ElicitState,
            &call_binding(tool, principal, args),
            &plain,
        ) else {
            return Some(Reply::Outcome(Outcome::Error(ToolError::new(
                "The questions could not be sealed",
            ))));
        };
        let mut requests = InputRequests::new();
        match question {
            Question::Elicit(request) => {
                let Ok(schema) = serde_json::from_value::<ElicitationSchema>(request.schema) else {
                    return None;
                };
                let params = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: request.message,
                    requested_schema: schema,
                };
                requests.insert(key, InputRequest::Elicitation(ElicitRequest::new(params)));
            }
            Question::Sample(params) => {
                requests.insert(
                    key,
                    InputRequest::CreateMessage(rmcp::model::CreateMessageRequest::new(params)),
                );
            }
        }
        Some(Reply::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )))
    }

    /// The `n`th answer, when it answers this question (`key`, `question`);
    /// otherwise the run went another way: that answer and the later ones are
    /// dropped and `None` asks the question.
    fn answer(&self, n: usize, key: &str, question: &str) -> Option<Value> {
        let mut answers = crate::sync::lock(&self.answers);
        match answers.get(n) {
            Some(a) if a.key == key && a.question == question => Some(a.value.clone()),
            _ => {
                answers.truncate(n);
                None
            }
        }
    }

    /// Stop the run: `question` goes back to the client.
    fn ask(&self, key: String, question: Question, text: String) -> crate::ClientError {
        *crate::sync::lock(&self.asked) = Some((key, question, text));
        self.stop.cancel();
        crate::ClientError::Cancelled
    }
}

/// The most question rounds a process without a confirmation store remembers
/// as used (expired ones are forgotten first; beyond it, a retry is refused
/// `unavailable` rather than let a used round run again).
const MAX_USED_ROUNDS: usize = 100_000;

/// The question rounds used in this process (id → expiry in ms), for a toolmark
/// without a confirmation store (its seal is this process's or the app's key).
static USED_ROUNDS: std::sync::Mutex<Option<crate::store::Expiring<()>>> =
    std::sync::Mutex::new(None);

/// Use the round `id` (expiring at `exp` ms) once: `Ok(true)` the first time.
/// With a confirmation store, the store's take-once and tombstones (so it holds
/// across every instance sharing it); without one, this process's memory.
async fn use_once(tm: &Toolmark, id: &str, exp: u64) -> Result<bool, crate::store::StoreError> {
    if let Some(shared) = &tm.inner.shared {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(exp);
        return shared.use_once(id, at).await;
    }
    let now = crate::store::to_ms(tm.inner.now());
    let mut used = crate::sync::lock(&USED_ROUNDS);
    let used = used.get_or_insert_with(Default::default);
    if used.contains(id) {
        return Ok(false);
    }
    // Forgetting the expired costs what is forgotten (an index by time).
    used.prune(now);
    if used.len() >= MAX_USED_ROUNDS {
        return Err(crate::store::StoreError::unavailable(
            "too many question rounds are open in this process; try again later",
        ));
    }
    used.insert(id, exp, ());
    Ok(true)
}

/// Why a retry's `requestState` is not taken.
pub(crate) enum StateError {
    /// It does not open for this call: changed, or sent with other arguments,
    /// to another tool or by another caller. A protocol error (`-32602`).
    Tampered,
    /// It opened, and says the call is over (expired, say).
    Outcome(Outcome),
}

/// A [`Round`] as a call's client.
pub(crate) struct RoundClient(pub(crate) Arc<Round>);

impl crate::CallerClient for RoundClient {
    fn elicit(
        &self,
        request: crate::ElicitRequest,
    ) -> futures_util::future::BoxFuture<'static, Result<crate::Elicited, crate::ClientError>> {
        let round = &self.0;
        if !round.elicits {
            crate::sync::lock(&round.missing).elicitation = Some(Default::default());
            return Box::pin(std::future::ready(Err(crate::ClientError::NotSupported {
                request: "elicitation",
                reason: "the request's client capabilities do not declare elicitation (form mode)"
                    .to_owned(),
            })));
        }
        let n = round.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let text = elicit_question(&request);
        let key = request.key.clone().unwrap_or_else(|| elicit_key(n));
        let result = match round.answer(n, &key, &text) {
            Some(v) => super::client::elicited(v),
            None => {
                if let Err(e) = super::client::elicitation_schema(request.schema.clone()) {
                    Err(e)
                } else {
                    // The run stops here; the question goes back to the client.
                    Err(round.ask(key, Question::Elicit(request), text))
                }
            }
        };
        Box::pin(std::future::ready(result))
    }

    #[allow(deprecated)]
    fn sample(
        &self,
        request: crate::SampleRequest,
    ) -> futures_util::future::BoxFuture<'static, Result<crate::Sampled, crate::ClientError>> {
        let round = &self.0;
        if !round.samples {
            crate::sync::lock(&round.missing).sampling = Some(Default::default());
            return Box::pin(std::future::ready(Err(crate::ClientError::NotSupported {
                request: "sampling",
                reason: "the request's client capabilities do not declare sampling".to_owned(),
            })));
        }
        let n = round.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let key = request.key.clone().unwrap_or_else(|| sample_key(n));
        let params = super::client::sample_params(request);
        let text = sample_question(&params);
        let result = match round.answer(n, &key, &text) {
            Some(v) => serde_json::from_value::<rmcp::model::CreateMessageResult>(v)
                .map(super::client::sampled)
                .map_err(|e| crate::ClientError::Failed {
                    reason: format!("the client's answer is not a sampling result: {e}"),
                }),
            // The run stops here; the question goes back to the client.
            None => Err(round.ask(key, Question::Sample(params), text)),
        };
        Box::pin(std::future::ready(result))
    }
}
