//! The one deferred flow over a [`MemoryStore`]: two instances on one store, every
//! byte the store is handed (records, remembered decisions, pub/sub messages) and
//! hands back, the pending list of the store, what the approver is shown, each
//! answer's outcome and both instances' bridges, events and traces. The answers
//! approve with the shown input sent back, edit it, or reject with a reason that
//! quotes a secret (the app's words go through the call's secret set too).

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::sync::broadcast;
use toolmark::store::{
    Caps, ConfirmRecord, ConfirmStore, DecisionRecord, Evicted, MemoryStore, StoreError,
};
use toolmark::{CallOptions, Caller, Decision, Toolmark};

use crate::app::{app, App, Card, Signup};
use crate::canary::{self, Canary};
use crate::core::{check, outcome_text, Observer};
use crate::{plants, runner, Plant};

const KEY: [u8; 32] = *b"canary-memory-key-0123456789abcd";

/// A [`MemoryStore`] that writes down every byte it is handed or hands back.
#[derive(Clone)]
pub(crate) struct Spy {
    store: MemoryStore,
    log: Arc<Mutex<Vec<String>>>,
}

impl Spy {
    pub(crate) fn new() -> Spy {
        Spy {
            store: MemoryStore::new(),
            log: Arc::default(),
        }
    }

    fn note(&self, what: &str, bytes: impl AsRef<str>) {
        self.log
            .lock()
            .unwrap()
            .push(format!("{what} {}", bytes.as_ref()));
    }

    fn note_json<T: serde::Serialize>(&self, what: &str, value: &T) {
        self.note(what, serde_json::to_string(value).unwrap_or_default());
    }

    /// What the store saw since the last look.
    pub(crate) fn take(&self) -> String {
        std::mem::take(&mut *self.log.lock().unwrap()).join("\n")
    }
}

impl ConfirmStore for Spy {
    fn durable(&self) -> bool {
        false
    }

    fn put(
        &self,
        record: ConfirmRecord,
        caps: Caps,
    ) -> BoxFuture<'_, Result<Vec<Evicted>, StoreError>> {
        self.note_json("put", &record);
        self.store.put(record, caps)
    }

    fn take<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        keep_until: SystemTime,
    ) -> BoxFuture<'a, Result<Option<ConfirmRecord>, StoreError>> {
        Box::pin(async move {
            let out = self.store.take(id, token, keep_until).await;
            if let Ok(Some(r)) = &out {
                self.note_json("take", r);
            }
            out
        })
    }

    fn restore<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.store.restore(id, token)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
        Box::pin(async move {
            let out = self.store.list().await;
            if let Ok(records) = &out {
                self.note_json("list", records);
            }
            out
        })
    }

    fn take_expired(
        &self,
        now: SystemTime,
    ) -> BoxFuture<'_, Result<Vec<ConfirmRecord>, StoreError>> {
        self.store.take_expired(now)
    }

    fn publish(&self, message: String) -> BoxFuture<'_, Result<(), StoreError>> {
        self.note("publish", &message);
        self.store.publish(message)
    }

    fn subscribe(&self) -> broadcast::Receiver<String> {
        self.store.subscribe()
    }

    fn remember(&self, decision: DecisionRecord) -> BoxFuture<'_, Result<(), StoreError>> {
        self.note_json("remember", &decision);
        self.store.remember(decision)
    }

    fn remembered_for<'a>(
        &'a self,
        tool: &'a str,
        caller: Caller,
    ) -> BoxFuture<'a, Result<Option<DecisionRecord>, StoreError>> {
        self.store.remembered_for(tool, caller)
    }

    fn remembered(&self) -> BoxFuture<'_, Result<Vec<DecisionRecord>, StoreError>> {
        self.store.remembered()
    }

    fn forget<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.store.forget(id)
    }
}

/// One case on two instances `one` and `two` sharing a store: calls on `one`
/// (deferred: kept in the store), the store's pending list read on `two`, each
/// answered on `two` as the plant says.
pub(crate) async fn deferred_on_a_store(
    one: &App,
    two: &App,
    p: Plant,
    c: &mut Canary,
    secret: &str,
) -> Vec<(&'static str, String)> {
    let mut seen = Vec::new();
    let number = c.variant(p.kind.wrapping_add(1));
    one.signup.set(Signup {
        name: "Ada".to_owned(),
        card: Some(Card {
            number: number.clone(),
            cvc: secret.to_owned(),
        }),
    });
    two.signup.set(one.signup.values());
    let agent = CallOptions::new(Caller::InApp);
    let asked = [
        one.tm
            .call(
                "vault.pay",
                p.pay_input("Ada", secret, &number),
                agent.clone(),
            )
            .await,
        one.tm.call("signup.submit", json!({}), agent.clone()).await,
        one.tm
            .call(
                "vault.labels",
                json!({"labels": {secret: number.clone()}}),
                agent,
            )
            .await,
    ];
    let pending = two
        .tm
        .pending_confirmations_async()
        .await
        .expect("the store answers");
    seen.push((
        "the store's pending list",
        serde_json::to_string(&pending).unwrap(),
    ));
    seen.push(("the store's pending list (Debug)", format!("{pending:?}")));
    for out in asked {
        seen.extend(outcome_text(&out));
        let Some(id) = out.confirm_id() else { continue };
        let shown = pending
            .iter()
            .find(|pc| pc.confirm_id == id)
            .map(|pc| pc.input.clone());
        let decision = match (p.pick % 4, shown) {
            (0, Some(input)) => Decision::approve_with(input),
            (1, Some(mut input)) => {
                if let Some(obj) = input.as_object_mut() {
                    obj.insert("holder".into(), json!("Grace"));
                }
                Decision::approve_with(input)
            }
            (2, _) => Decision::reject_with(format!("not with {secret}")),
            _ => Decision::approve(),
        };
        let done = two.tm.confirm_pending(id, decision).await;
        seen.extend(outcome_text(&done));
    }
    seen
}

/// Two toolmarks on one spied `MemoryStore` (sealed under `KEY`).
pub(crate) fn two_on(spy: &Spy) -> (App, App) {
    let build = || app(Toolmark::builder().seal_key(KEY).confirm_store(spy.clone()));
    (build(), build())
}

#[test]
fn memory_store_deferred_flow() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let trace = canary::capture();
    let spy = Spy::new();
    let (one, two) = rt.block_on(async { two_on(&spy) });
    let observe_one = std::cell::RefCell::new(rt.block_on(async { Observer::new(&one.tm) }));
    let observe_two = std::cell::RefCell::new(rt.block_on(async { Observer::new(&two.tm) }));
    let _ = trace.take();
    let mut run = runner(1_000);
    let result = run.run(&plants(), |p| {
        let (mut c, secret) = p.canary();
        let mut seen = rt.block_on(async {
            let mut seen = deferred_on_a_store(&one, &two, p, &mut c, &secret).await;
            // The other instance's bridge hears of each answer over the store's bus.
            tokio::task::yield_now().await;
            seen.push(("what the store was handed or handed back", spy.take()));
            seen
        });
        seen.extend(one.seen.take());
        seen.extend(two.seen.take());
        seen.extend(rt.block_on(async { observe_one.borrow_mut().take(&one.tm, &trace) }));
        seen.extend(rt.block_on(async { observe_two.borrow_mut().take(&two.tm, &trace) }));
        check(&c, &seen)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
