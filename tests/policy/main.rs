//! Approval policies, remembered decisions and the approver in the audit event
//! (issue 14, first part): see `toolmark::policy`.

mod audit;
mod decide;
mod no_handler;
mod person;
mod remember;
mod rules;
mod shared;
#[path = "../support/stores.rs"]
mod stores;

pub(crate) use stores::{on_every_store, on_shared_stores, Store};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use toolmark::policy::answering;
use toolmark::{
    Answer, Approver, CallOptions, Caller, ConfirmHandler, ConfirmMode, ConfirmRequest, Decision,
    Effect, Event, Events, Outcome, RefusalCode, ToolSpec, Toolmark, ToolmarkBuilder,
};

/// A tool with `effect` that counts its runs and returns its caller.
pub(crate) fn tool(name: &str, effect: Effect, runs: &Arc<AtomicUsize>) -> ToolSpec {
    let runs = runs.clone();
    ToolSpec::new(name, format!("Do {name}"))
        .input_schema(json!({
            "type": "object",
            "properties": {"to": {"type": "string"}, "pin": {"type": "string"}},
            "additionalProperties": false
        }))
        .effect(effect)
        .handler(move |ctx, _input| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(json!({"caller": ctx.caller()}))
            }
        })
}

/// A confirm handler that answers every request with `answer()` and counts the
/// requests it was shown.
#[derive(Clone)]
pub(crate) struct Asker {
    pub(crate) asked: Arc<AtomicUsize>,
    pub(crate) seen: Arc<Mutex<Vec<ConfirmRequest>>>,
}

impl Asker {
    pub(crate) fn new() -> Self {
        Asker {
            asked: Arc::new(AtomicUsize::new(0)),
            seen: Arc::default(),
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }

    /// A handler answering with `answer`.
    pub(crate) fn handler<A>(
        &self,
        answer: impl Fn() -> A + Send + Sync + 'static,
    ) -> impl ConfirmHandler
    where
        A: Into<Answer>,
    {
        let asked = self.asked.clone();
        let seen = self.seen.clone();
        answering(move |req| {
            asked.fetch_add(1, Ordering::SeqCst);
            seen.lock().unwrap().push(req);
            std::future::ready(answer().into())
        })
    }
}

/// The tools `mail.send`, `mail.save_draft` (consequential), `files.delete`
/// (destructive), `pay.send`, `pay.cards.add`, `payroll.run` (consequential) and
/// a root `pay` (consequential), all counting into one counter.
pub(crate) fn with_tools(builder: ToolmarkBuilder) -> (Toolmark, Arc<AtomicUsize>) {
    let tm = builder.build().unwrap();
    let runs = register_tools(&tm);
    (tm, runs)
}

/// [`with_tools`] on a fresh `store`, or `None` (Redis absent outside CI: skip).
pub(crate) async fn with_tools_on(
    store: Store,
    builder: ToolmarkBuilder,
) -> Option<(Toolmark, Arc<AtomicUsize>)> {
    let tm = store.build(builder).await?;
    let runs = register_tools(&tm);
    Some((tm, runs))
}

/// Register the tools of [`with_tools`] on `tm`.
pub(crate) fn register_tools(tm: &Toolmark) -> Arc<AtomicUsize> {
    let runs = Arc::new(AtomicUsize::new(0));
    for (name, effect) in [
        ("mail.send", Effect::Consequential),
        ("mail.save_draft", Effect::Consequential),
        ("files.delete", Effect::Destructive),
        ("pay.send", Effect::Consequential),
        ("pay.cards.add", Effect::Consequential),
        ("payroll.run", Effect::Consequential),
        ("pay", Effect::Consequential),
    ] {
        let (scope, short) = match name.rsplit_once('.') {
            Some((scope, short)) => (tm.scope_at(scope), short),
            None => (tm.root(), name),
        };
        scope.register(tool(short, effect, &runs)).unwrap();
    }
    runs
}

pub(crate) fn runs(r: &Arc<AtomicUsize>) -> usize {
    r.load(Ordering::SeqCst)
}

pub(crate) fn opts(caller: Caller) -> CallOptions {
    CallOptions::new(caller)
}

pub(crate) fn code(o: &Outcome) -> Option<RefusalCode> {
    o.refusal_code()
}

pub(crate) fn message(o: &Outcome) -> String {
    o.refusal().map(|r| r.message.clone()).unwrap_or_default()
}

pub(crate) fn caller_of(o: &Outcome) -> Value {
    o.output().map_or(Value::Null, |v| v["caller"].clone())
}

/// Every `confirmation_resolved` so far: (tool, approved, reason, approver).
pub(crate) fn resolved(events: &mut Events) -> Vec<(String, bool, Option<String>, Approver)> {
    let mut out = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let Event::ConfirmationResolved {
            tool,
            approved,
            reason,
            approver,
            ..
        } = e
        {
            out.push((tool, approved, reason, approver));
        }
    }
    out
}

/// In-app calls inline (so they ask the handler and wait).
pub(crate) fn inline_inapp(builder: ToolmarkBuilder) -> ToolmarkBuilder {
    builder.confirm_mode(Caller::InApp, ConfirmMode::Inline)
}

pub(crate) fn approve() -> Decision {
    Decision::approve()
}
