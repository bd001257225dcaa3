//! Sync `#[tool]` fns run on threads of their own (not tokio's blocking pool, whose
//! threads the runtime waits for at shutdown): a sync run that never returns is
//! abandoned at its deadline and can never keep the process from exiting. Idle
//! threads are kept a few seconds for reuse. Abandoned runs still on a thread are
//! counted per toolmark and bounded (`max_abandoned_sync_runs`).

use std::future::Future;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use super::current::{RunMarker, SyncInherit};
use crate::event::Event;
use crate::sync::lock;

/// How long an idle worker thread waits for another sync run before it ends.
const IDLE_KEEP: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

/// Idle workers, each waiting on its own channel.
static IDLE: Mutex<Vec<(u64, mpsc::Sender<Job>)>> = Mutex::new(Vec::new());
static NEXT_WORKER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The panic payload that makes the runner refuse a call `busy` (raised with
/// `resume_unwind`, so no panic hook sees it).
pub(crate) struct SyncBusy(pub(crate) String);

const RUNNING: u8 = 0;
const DONE: u8 = 1;
const ABANDONED: u8 = 2;

/// Run `f` on a worker thread; the future resolves to its result (a panic in `f`
/// is resumed on the awaiting task, where the runner turns it into an `error`).
/// `inherit`: what the thread takes from the run (`current::sync_inherit`).
pub(crate) fn run_blocking<F, R>(inherit: SyncInherit, f: F) -> impl Future<Output = R> + Send
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let inner = inherit.inner.as_ref().and_then(std::sync::Weak::upgrade);
    let counter = inner.as_ref().map(|i| Arc::clone(&i.sync_abandoned));
    if let (Some(inner), Some(counter)) = (&inner, &counter) {
        let bound = inner.config.max_abandoned_sync_runs;
        let now = counter.load(Ordering::Acquire);
        if now >= bound {
            std::panic::resume_unwind(Box::new(SyncBusy(format!(
                "{now} earlier runs of sync tools never returned and still hold their \
                 threads (the bound is {bound}); try again later"
            ))));
        }
    }
    drop(inner);
    let state = Arc::new(AtomicU8::new(RUNNING));
    let (tx, rx) = tokio::sync::oneshot::channel();
    let handle = tokio::runtime::Handle::try_current().ok();
    let job: Job = {
        let state = Arc::clone(&state);
        let counter = counter.clone();
        let secrets = inherit.secrets.clone();
        Box::new(move || {
            let _rt = handle.as_ref().map(tokio::runtime::Handle::enter);
            let mut marker = RunMarker::new(None, secrets);
            let r = {
                let _entered = marker.enter();
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            };
            let _ = tx.send(r);
            if state.swap(DONE, Ordering::AcqRel) == ABANDONED
                && let Some(c) = counter
            {
                c.fetch_sub(1, Ordering::AcqRel);
            }
        })
    };
    let started = execute(job);
    let guard = AbandonGuard {
        state,
        counter,
        inner: inherit.inner,
        tool: inherit.tool,
    };
    async move {
        if let Err(e) = started {
            std::panic::panic_any(format!("could not start a thread for the sync tool: {e}"));
        }
        let r = rx.await;
        drop(guard);
        match r {
            Ok(Ok(v)) => v,
            Ok(Err(payload)) => std::panic::resume_unwind(payload),
            Err(_) => std::panic::panic_any("the sync tool's thread ended without a result"),
        }
    }
}

/// Counts the run as abandoned when its future is dropped before the thread is done.
struct AbandonGuard {
    state: Arc<AtomicU8>,
    counter: Option<Arc<AtomicUsize>>,
    inner: Option<std::sync::Weak<crate::toolmark::Inner>>,
    tool: Option<Arc<str>>,
}

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        let abandoned = self
            .state
            .compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if !abandoned {
            return;
        }
        let Some(counter) = &self.counter else { return };
        let n = counter.fetch_add(1, Ordering::AcqRel) + 1;
        if let Some(inner) = self.inner.as_ref().and_then(std::sync::Weak::upgrade) {
            inner.emit(|| Event::SyncRunAbandoned {
                tool: self.tool.as_deref().unwrap_or_default().to_owned(),
                abandoned: n,
            });
        }
    }
}

/// Hand `job` to an idle worker, or start one.
fn execute(mut job: Job) -> std::io::Result<()> {
    loop {
        let idle = lock(&IDLE).pop();
        match idle {
            Some((_, tx)) => match tx.send(job) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(back)) => job = back,
            },
            None => break,
        }
    }
    std::thread::Builder::new()
        .name("toolmark-sync".to_owned())
        .spawn(move || worker(job))
        .map(drop)
}

fn worker(first: Job) {
    first();
    loop {
        let id = NEXT_WORKER.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel::<Job>();
        lock(&IDLE).push((id, tx));
        let job = match rx.recv_timeout(IDLE_KEEP) {
            Ok(job) => job,
            Err(_) => {
                let mut idle = lock(&IDLE);
                if let Some(pos) = idle.iter().position(|(i, _)| *i == id) {
                    idle.remove(pos);
                    return;
                }
                drop(idle);
                // Someone took our sender just now: its job is on the way.
                match rx.recv() {
                    Ok(job) => job,
                    Err(_) => return,
                }
            }
        };
        job();
    }
}
