//! [`Gate`]: a scope's queue. One run at a time, waiters served strictly in arrival
//! order, and an uncontended pass costs two atomic operations (no lock), since
//! nearly every call finds its scope idle.
//!
//! State: one word, bit 0 = held, the rest = number of waiters (×2). Waiters sit in a
//! FIFO behind a mutex; every change to the waiter count happens under it, so the
//! count in the word always equals the queue's length.
//!
//! What ends a wait early (the scope's disposal, the toolmark's shutdown) is watched
//! once per gate, not once per waiter: [`Gate::acquire_until`] checks the caller's
//! `stop` on every poll, and the first waiter registers the gate with the tokens
//! that are cancelled when `stop` turns true; their cancellation wakes every waiter,
//! which then sees `stop`. (A waiter registering with them itself took, per poll,
//! two locks of mutexes every waiting call of the toolmark shares, and two more
//! to leave.)

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll, Wake, Waker};

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::sync::lock;

const HELD: usize = 1;
const WAITER: usize = 2;

/// How many times the first in line looks for its grant before it parks
/// ([`Gate::spin_for_grant`]): with a pause between looks, a few microseconds.
const SPINS: u32 = 256;

/// Whether spinning for a grant can pay: the call runs on a multi-thread runtime
/// of a machine with more than one CPU, so the holder can be running beside it (on
/// a current-thread runtime it runs only once this call has parked).
fn spin_helps() -> bool {
    static CPUS: OnceLock<bool> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
        && tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

type Queue = Mutex<VecDeque<Arc<Slot>>>;

pub(crate) struct Gate {
    state: AtomicUsize,
    queue: Arc<Queue>,
    /// The holder's run awaits something (its first poll was pending): a waiter
    /// does not spin for it (see [`Gate::spin_for_grant`]). Cleared as the gate is
    /// released or handed on.
    pub(super) holder_waits: AtomicBool,
    /// The gate's registrations with the tokens that end every wait, made once by
    /// the first waiter of [`acquire_until`](Gate::acquire_until) and kept while the
    /// gate lives (dropping one would leave the token's list).
    watch: OnceLock<Vec<Mutex<Pin<Box<WaitForCancellationFutureOwned>>>>>,
}

struct Slot {
    granted: AtomicBool,
    /// First in line behind the holder: woken once to spin for its grant.
    head: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

/// The waker the gate registers with its tokens: wakes every waiter in the queue.
struct WakeAll(Weak<Queue>);

impl Wake for WakeAll {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let Some(queue) = self.0.upgrade() else {
            return;
        };
        // Woken outside the queue's lock.
        let wakers: Vec<Waker> = lock(&queue)
            .iter()
            .filter_map(|slot| lock(&slot.waker).clone())
            .collect();
        for w in wakers {
            w.wake();
        }
    }
}

/// Holding the gate; dropping it lets the next waiter in.
pub(crate) struct GatePermit<'a>(&'a Gate);

impl Drop for GatePermit<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// What ends a wait of [`Gate::acquire_until`] without the gate, and why.
pub(crate) trait Ends {
    /// Why the wait ended.
    type Why;
    /// Something that ends the wait (checked on every poll, before the gate is
    /// taken). It must turn true before one of the watched tokens is cancelled:
    /// their cancellation is what wakes the waiters to look.
    fn stop(&self) -> Option<Self::Why>;
    /// Joining a queue of `waiting` calls is refused (checked once, under the
    /// queue's lock).
    fn full(&self, waiting: usize) -> Option<Self::Why>;
}

/// Nothing ends the wait: [`Gate::acquire`].
pub(crate) struct Never;

impl Ends for Never {
    type Why = std::convert::Infallible;
    fn stop(&self) -> Option<Self::Why> {
        None
    }
    fn full(&self, _: usize) -> Option<Self::Why> {
        None
    }
}

impl Gate {
    pub(crate) fn new() -> Self {
        Gate {
            state: AtomicUsize::new(0),
            queue: Arc::new(Mutex::new(VecDeque::new())),
            holder_waits: AtomicBool::new(false),
            watch: OnceLock::new(),
        }
    }

    /// Take the gate if it is free and nobody waits.
    pub(crate) fn try_acquire(&self) -> Option<GatePermit<'_>> {
        self.state
            .compare_exchange(0, HELD, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| GatePermit(self))
    }

    /// Wait for the gate, behind everyone already waiting. Cancel-safe: dropping
    /// the future leaves the queue (or passes on a grant it did not see).
    pub(crate) async fn acquire(&self) -> GatePermit<'_> {
        match self.acquire_until(&[], Never).await {
            Ok(permit) => permit,
            Err(never) => match never {},
        }
    }

    /// [`acquire`](Self::acquire), ended early by `ends`: its `stop` is checked
    /// on every poll before the gate is taken (a stop wins over a grant, which
    /// passes on), its `full` once before joining the queue. A cancellation of one
    /// of `tokens` (the same tokens on every call of this gate) wakes every waiter
    /// to look at `stop`.
    pub(crate) fn acquire_until<'a, 't, E: Ends>(
        &'a self,
        tokens: &'t [&'t CancellationToken],
        ends: E,
    ) -> Acquire<'a, 't, E> {
        Acquire {
            gate: self,
            place: Place::default(),
            tokens,
            ends,
        }
    }

    /// Register the gate with `tokens`, once: a cancellation wakes every waiter
    /// (at once, if one is cancelled already).
    fn watch(&self, tokens: &[&CancellationToken]) {
        if tokens.is_empty() || self.watch.get().is_some() {
            return;
        }
        self.watch.get_or_init(|| {
            let waker = Waker::from(Arc::new(WakeAll(Arc::downgrade(&self.queue))));
            let mut cx = Context::from_waker(&waker);
            let mut fired = false;
            let watch = tokens
                .iter()
                .map(|token| {
                    let mut fut = Box::pin((*token).clone().cancelled_owned());
                    fired |= fut.as_mut().poll(&mut cx).is_ready();
                    Mutex::new(fut)
                })
                .collect();
            if fired {
                waker.wake_by_ref();
            }
            watch
        });
    }

    /// The holder's run has to wait for something (its first poll was pending):
    /// a call that queues behind it parks at once instead of spinning.
    pub(crate) fn holder_waits(&self) {
        self.holder_waits.store(true, Ordering::Relaxed);
    }

    /// Wait a little, on this thread, for a grant to `slot`, the first in line:
    /// whether it came. Worth it only while the holder runs on another thread right
    /// now (a run that has not had to wait for anything ends in microseconds):
    /// parking instead costs the waiter a wake through the scheduler, and every
    /// call queued behind it one more (a chain of wakes that calls arriving at the
    /// spawn rate can outrun). The spin is bounded (a few microseconds), so a
    /// holder that runs long costs a waiter no more than that; the order is kept,
    /// as the waiter is in the queue already.
    fn spin_for_grant(&self, slot: &Slot) -> bool {
        for _ in 0..SPINS {
            if slot.granted.load(Ordering::Acquire) {
                return true;
            }
            if self.holder_waits.load(Ordering::Relaxed) {
                break;
            }
            std::hint::spin_loop();
        }
        slot.granted.load(Ordering::Acquire)
    }

    /// Whether `slot` has its grant: looked for in a spin first (when `spin`),
    /// then once more after `waker` is stored, as a grant made before it was
    /// stored woke nobody.
    fn granted_or_park(&self, slot: &Slot, spin: bool, waker: &Waker) -> bool {
        if spin && self.spin_for_grant(slot) {
            return true;
        }
        *lock(&slot.waker) = Some(waker.clone());
        slot.granted.load(Ordering::Acquire)
    }

    fn release(&self) {
        self.holder_waits.store(false, Ordering::Relaxed);
        if self
            .state
            .compare_exchange(HELD, 0, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        let mut queue = lock(&self.queue);
        self.hand_on(&mut queue);
    }

    /// With the queue locked and the gate held by the caller: give it to the
    /// first waiter, or free it.
    fn hand_on(&self, queue: &mut VecDeque<Arc<Slot>>) {
        self.holder_waits.store(false, Ordering::Relaxed);
        match queue.pop_front() {
            Some(next) => {
                // Still held: ownership moves to `next`.
                self.state.fetch_sub(WAITER, Ordering::AcqRel);
                // The one behind it is woken now, to spin for its own grant while
                // `next` runs (woken first, so that `next` is the one run first).
                if let Some(after) = queue.front() {
                    after.head.store(true, Ordering::Relaxed);
                    if let Some(w) = lock(&after.waker).as_ref() {
                        w.wake_by_ref();
                    }
                }
                next.grant();
            }
            None => {
                self.state.fetch_and(!HELD, Ordering::Release);
            }
        }
    }

    /// `slot` leaves the queue: a grant it did not use passes on.
    fn leave(&self, slot: &Arc<Slot>) {
        let mut queue = lock(&self.queue);
        if slot.granted.load(Ordering::Acquire) {
            // Granted but never seen: pass it on.
            self.hand_on(&mut queue);
        } else if let Some(pos) = queue.iter().position(|s| Arc::ptr_eq(s, slot)) {
            queue.remove(pos);
            self.state.fetch_sub(WAITER, Ordering::AcqRel);
        }
    }
}

impl Slot {
    fn grant(&self) {
        self.granted.store(true, Ordering::Release);
        if let Some(w) = lock(&self.waker).take() {
            w.wake();
        }
    }
}

/// A waiter's place in a gate's line: empty until it joins the queue. Whoever
/// holds one polls it with [`Gate::poll_acquire`] and, if it is dropped before the
/// gate is taken, gives it up with [`Gate::abandon`] (it holds no reference to its
/// gate, so that a wait can be kept in a few bytes).
#[derive(Default)]
pub(crate) struct Place(Option<Arc<Slot>>);

impl Gate {
    /// One poll of a wait for the gate from `place` (see
    /// [`acquire_until`](Self::acquire_until), whose future is this poll and
    /// `place`).
    pub(crate) fn poll_acquire<E: Ends>(
        &self,
        place: &mut Place,
        tokens: &[&CancellationToken],
        ends: &E,
        cx: &mut Context<'_>,
    ) -> Poll<Result<GatePermit<'_>, E::Why>> {
        if let Some(why) = ends.stop() {
            self.abandon(place);
            return Poll::Ready(Err(why));
        }
        if let Some(slot) = &place.0 {
            let spin = slot.head.swap(false, Ordering::Relaxed) && spin_helps();
            if self.granted_or_park(slot, spin, cx.waker()) {
                place.0 = None;
                return Poll::Ready(Ok(GatePermit(self)));
            }
            return Poll::Pending;
        }
        if let Some(permit) = self.try_acquire() {
            return Poll::Ready(Ok(permit));
        }
        let may_spin = spin_helps();
        let mut queue = lock(&self.queue);
        if let Some(why) = ends.full(queue.len()) {
            return Poll::Ready(Err(why));
        }
        // The first in line may spin for its grant (see `spin_for_grant`); its
        // waker is given only if the spin ends without one, so a grant that comes
        // while it spins wakes nobody.
        let spin = may_spin && queue.is_empty();
        let slot = Arc::new(Slot {
            granted: AtomicBool::new(false),
            head: AtomicBool::new(false),
            waker: Mutex::new((!spin).then(|| cx.waker().clone())),
        });
        queue.push_back(Arc::clone(&slot));
        let before = self.state.fetch_add(WAITER, Ordering::AcqRel);
        if before & HELD == 0 {
            // Freed between our look and our enqueue: nobody will hand it on, so
            // take it for the first in line (which may be us).
            self.state.fetch_or(HELD, Ordering::AcqRel);
            self.hand_on(&mut queue);
        }
        drop(queue);
        if slot.granted.load(Ordering::Acquire) {
            return Poll::Ready(Ok(GatePermit(self)));
        }
        if spin && self.granted_or_park(&slot, true, cx.waker()) {
            return Poll::Ready(Ok(GatePermit(self)));
        }
        // In the queue (so a cancellation from here on wakes us), then look again:
        // `stop` turned true before any token is cancelled.
        self.watch(tokens);
        if let Some(why) = ends.stop() {
            self.leave(&slot);
            return Poll::Ready(Err(why));
        }
        place.0 = Some(slot);
        Poll::Pending
    }

    /// Give up `place` (its wait ended without the gate, or was dropped): it leaves
    /// the queue, and a grant it did not see passes on.
    pub(crate) fn abandon(&self, place: &mut Place) {
        if let Some(slot) = place.0.take() {
            self.leave(&slot);
        }
    }
}

/// The future of [`Gate::acquire`] and [`Gate::acquire_until`].
pub(crate) struct Acquire<'a, 't, E> {
    gate: &'a Gate,
    place: Place,
    tokens: &'t [&'t CancellationToken],
    ends: E,
}

impl<'a, E: Ends + Unpin> Future for Acquire<'a, '_, E> {
    type Output = Result<GatePermit<'a>, E::Why>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.gate
            .poll_acquire(&mut this.place, this.tokens, &this.ends, cx)
    }
}

impl<E> Drop for Acquire<'_, '_, E> {
    fn drop(&mut self) {
        self.gate.abandon(&mut self.place);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn uncontended_take_and_release() {
        let gate = Gate::new();
        let p = gate.try_acquire().unwrap();
        assert!(gate.try_acquire().is_none());
        drop(p);
        assert!(gate.try_acquire().is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn waiters_are_served_in_arrival_order() {
        let gate = Arc::new(Gate::new());
        let order = Arc::new(Mutex::new(Vec::new()));
        let held = gate.try_acquire().map(|p| {
            std::mem::forget(p);
        });
        assert!(held.is_some());
        let mut handles = Vec::new();
        for i in 0..10 {
            let (gate, order) = (gate.clone(), order.clone());
            handles.push(tokio::spawn(async move {
                let _p = gate.acquire().await;
                order.lock().unwrap().push(i);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }));
            tokio::task::yield_now().await;
        }
        // Release the forgotten permit.
        gate.release();
        for h in handles {
            h.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
    }

    /// A waiter polled again with another waker is woken through the new one,
    /// once, and the old one never.
    #[test]
    fn a_grant_wakes_the_waker_of_the_last_poll() {
        struct Count(AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let (first, second) = (
            Arc::new(Count(AtomicUsize::new(0))),
            Arc::new(Count(AtomicUsize::new(0))),
        );
        let (w1, w2) = (Waker::from(first.clone()), Waker::from(second.clone()));
        let gate = Gate::new();
        let p = gate.try_acquire().unwrap();
        let mut waiter = Box::pin(gate.acquire());
        assert!(waiter
            .as_mut()
            .poll(&mut Context::from_waker(&w1))
            .is_pending());
        assert!(waiter
            .as_mut()
            .poll(&mut Context::from_waker(&w1))
            .is_pending());
        assert!(waiter
            .as_mut()
            .poll(&mut Context::from_waker(&w2))
            .is_pending());
        drop(p);
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(
            second.0.load(Ordering::SeqCst),
            1,
            "woken once, by the last waker"
        );
        assert!(waiter
            .as_mut()
            .poll(&mut Context::from_waker(&w1))
            .is_ready());
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_waiter_leaves_the_queue() {
        let gate = Arc::new(Gate::new());
        let p = gate.try_acquire().unwrap();
        let mut first = Box::pin(gate.acquire());
        assert!(futures_util::poll!(first.as_mut()).is_pending());
        let second = tokio::spawn({
            let gate = gate.clone();
            async move {
                let _p = gate.acquire().await;
            }
        });
        tokio::task::yield_now().await;
        drop(first);
        drop(p);
        second.await.unwrap();
        assert!(gate.try_acquire().is_some(), "free again, no waiter left");
    }

    #[tokio::test(start_paused = true)]
    async fn a_grant_to_a_dropped_waiter_is_passed_on() {
        let gate = Arc::new(Gate::new());
        let p = gate.try_acquire().unwrap();
        let mut first = Box::pin(gate.acquire());
        assert!(futures_util::poll!(first.as_mut()).is_pending());
        let mut second = Box::pin(gate.acquire());
        assert!(futures_util::poll!(second.as_mut()).is_pending());
        drop(p); // granted to `first`, which never looks again
        drop(first);
        assert!(futures_util::poll!(second.as_mut()).is_ready());
    }

    #[test]
    fn mutual_exclusion_under_threads() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .build()
            .unwrap();
        let gate = Arc::new(Gate::new());
        let inside = Arc::new(AtomicUsize::new(0));
        let total = Arc::new(AtomicUsize::new(0));
        rt.block_on(async {
            let mut handles = Vec::new();
            for _ in 0..64 {
                let (gate, inside, total) = (gate.clone(), inside.clone(), total.clone());
                handles.push(tokio::spawn(async move {
                    for _ in 0..200 {
                        let _p = match gate.try_acquire() {
                            Some(p) => p,
                            None => gate.acquire().await,
                        };
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                        tokio::task::yield_now().await;
                        inside.fetch_sub(1, Ordering::SeqCst);
                        total.fetch_add(1, Ordering::SeqCst);
                    }
                }));
            }
            for h in handles {
                h.await.unwrap();
            }
        });
        assert_eq!(total.load(Ordering::SeqCst), 64 * 200);
        assert!(gate.try_acquire().is_some());
    }

    /// Ends for the tests: stops once `stopped` is set (before `token` is
    /// cancelled, as the contract asks), full at `bound` waiting.
    struct TestEnds {
        stopped: Arc<AtomicBool>,
        bound: usize,
    }

    impl Ends for TestEnds {
        type Why = &'static str;
        fn stop(&self) -> Option<&'static str> {
            self.stopped.load(Ordering::Acquire).then_some("stopped")
        }
        fn full(&self, waiting: usize) -> Option<&'static str> {
            (waiting >= self.bound).then_some("full")
        }
    }

    fn ends(stopped: &Arc<AtomicBool>, bound: usize) -> TestEnds {
        TestEnds {
            stopped: Arc::clone(stopped),
            bound,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_token_wakes_every_waiter_to_stop() {
        let gate = Gate::new();
        let token = CancellationToken::new();
        let stopped = Arc::new(AtomicBool::new(false));
        let tokens = [&token];
        let p = gate.try_acquire().unwrap();
        let mut waiters: Vec<_> = (0..5)
            .map(|_| Box::pin(gate.acquire_until(&tokens, ends(&stopped, usize::MAX))))
            .collect();
        for w in &mut waiters {
            assert!(futures_util::poll!(w.as_mut()).is_pending());
        }
        // Each waiter's waker is the test task's: count the wakes through a fresh one.
        let woken = Arc::new(AtomicUsize::new(0));
        struct Count(Arc<AtomicUsize>);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let waker = Waker::from(Arc::new(Count(Arc::clone(&woken))));
        let mut cx = Context::from_waker(&waker);
        for w in &mut waiters {
            assert!(w.as_mut().poll(&mut cx).is_pending());
        }
        stopped.store(true, Ordering::Release);
        token.cancel();
        assert_eq!(woken.load(Ordering::SeqCst), 5, "every waiter woken");
        for w in &mut waiters {
            assert!(matches!(
                w.as_mut().poll(&mut cx),
                Poll::Ready(Err("stopped"))
            ));
        }
        drop(waiters);
        drop(p);
        assert!(gate.try_acquire().is_some(), "free again, no waiter left");
    }

    #[tokio::test(start_paused = true)]
    async fn a_token_cancelled_before_the_first_wait_stops_it() {
        let gate = Gate::new();
        let token = CancellationToken::new();
        let stopped = Arc::new(AtomicBool::new(true));
        token.cancel();
        let tokens = [&token];
        let p = gate.try_acquire().unwrap();
        let r = gate
            .acquire_until(&tokens, ends(&stopped, usize::MAX))
            .await;
        assert!(matches!(r, Err("stopped")));
        drop(p);
        assert!(
            gate.try_acquire().is_some(),
            "the stopped waiter left the queue"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_wins_over_a_grant_which_passes_on() {
        let gate = Gate::new();
        let token = CancellationToken::new();
        let (first_stop, second_stop) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let tokens = [&token];
        let p = gate.try_acquire().unwrap();
        let mut first = Box::pin(gate.acquire_until(&tokens, ends(&first_stop, usize::MAX)));
        assert!(futures_util::poll!(first.as_mut()).is_pending());
        let mut second = Box::pin(gate.acquire_until(&tokens, ends(&second_stop, usize::MAX)));
        assert!(futures_util::poll!(second.as_mut()).is_pending());
        drop(p); // granted to `first`...
        first_stop.store(true, Ordering::Release); // ...which stops before it looks
        assert!(matches!(
            futures_util::poll!(first.as_mut()),
            Poll::Ready(Err("stopped"))
        ));
        assert!(matches!(
            futures_util::poll!(second.as_mut()),
            Poll::Ready(Ok(_))
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_queue_is_refused_and_not_joined() {
        let gate = Gate::new();
        let stopped = Arc::new(AtomicBool::new(false));
        let p = gate.try_acquire().unwrap();
        let mut first = Box::pin(gate.acquire_until(&[], ends(&stopped, 1)));
        assert!(futures_util::poll!(first.as_mut()).is_pending());
        let second = gate.acquire_until(&[], ends(&stopped, 1)).await;
        assert!(matches!(second, Err("full")));
        drop(p);
        assert!(
            futures_util::poll!(first.as_mut()).is_ready(),
            "the refused call never joined"
        );
    }

    #[test]
    fn a_stop_under_threads_ends_every_waiter() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .build()
            .unwrap();
        for _ in 0..20 {
            let gate = Arc::new(Gate::new());
            let token = CancellationToken::new();
            let stopped = Arc::new(AtomicBool::new(false));
            let (ran, ended) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let (done, all_done) = std::sync::mpsc::channel();
            rt.block_on(async {
                let mut handles = Vec::new();
                for _ in 0..64 {
                    let (gate, token, stopped) = (gate.clone(), token.clone(), stopped.clone());
                    let (ran, ended) = (ran.clone(), ended.clone());
                    handles.push(tokio::spawn(async move {
                        let tokens = [&token];
                        match gate
                            .acquire_until(&tokens, ends(&stopped, usize::MAX))
                            .await
                        {
                            Ok(_p) => {
                                ran.fetch_add(1, Ordering::SeqCst);
                                tokio::task::yield_now().await;
                            }
                            Err(_) => {
                                ended.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    }));
                }
                tokio::task::yield_now().await;
                stopped.store(true, Ordering::Release);
                token.cancel();
                let done = done.clone();
                tokio::spawn(async move {
                    for h in handles {
                        h.await.unwrap();
                    }
                    done.send(()).unwrap();
                });
            });
            // A waiter the cancellation failed to wake would hang: fail instead.
            all_done
                .recv_timeout(Duration::from_secs(30))
                .expect("every waiter ended");
            assert_eq!(
                ran.load(Ordering::SeqCst) + ended.load(Ordering::SeqCst),
                64
            );
            assert!(
                gate.try_acquire().is_some(),
                "free, nobody left in the queue"
            );
        }
    }

    /// Poll `fut` once with `waker`.
    fn poll_with<F: Future + ?Sized>(fut: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
        fut.poll(&mut Context::from_waker(waker))
    }

    /// A waker that writes its name into `log` each time it is woken.
    struct Named(&'static str, Arc<Mutex<Vec<&'static str>>>);

    impl Wake for Named {
        fn wake(self: Arc<Self>) {
            self.1.lock().unwrap().push(self.0);
        }
    }

    #[test]
    fn spinning_pays_only_on_a_multi_thread_runtime() {
        assert!(!spin_helps(), "outside a runtime");
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(
            !current.block_on(async { spin_helps() }),
            "a current-thread runtime runs the holder only once the waiter parks"
        );
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(multi.block_on(async { spin_helps() }), cpus > 1);
    }

    #[test]
    fn a_spin_gives_up_without_a_grant_and_sees_one_that_came() {
        let gate = Gate::new();
        let _held = gate.try_acquire().unwrap();
        let slot = Slot {
            granted: AtomicBool::new(false),
            head: AtomicBool::new(true),
            waker: Mutex::new(None),
        };
        gate.holder_waits();
        assert!(!gate.spin_for_grant(&slot), "no grant came");
        slot.granted.store(true, Ordering::Release);
        assert!(gate.spin_for_grant(&slot), "a grant is seen");
    }

    #[test]
    fn releasing_or_handing_on_forgets_that_the_holder_waited() {
        let gate = Gate::new();
        let held = gate.try_acquire().unwrap();
        gate.holder_waits();
        drop(held);
        assert!(!gate.holder_waits.load(Ordering::Relaxed), "released");
        let held = gate.try_acquire().unwrap();
        gate.holder_waits();
        let mut next = Box::pin(gate.acquire());
        let log = Arc::new(Mutex::new(Vec::new()));
        let waker = Waker::from(Arc::new(Named("next", Arc::clone(&log))));
        assert!(poll_with(next.as_mut(), &waker).is_pending());
        drop(held);
        assert!(
            !gate.holder_waits.load(Ordering::Relaxed),
            "handed on: the new holder has not waited for anything"
        );
    }

    /// When the gate passes to the first in line, the one behind it is woken too
    /// (before the grant's wake, so the granted one runs first), to spin for its
    /// own grant; it is woken again by that grant if its spin ends without one.
    #[test]
    fn the_next_in_line_is_woken_when_the_one_before_is_granted() {
        let gate = Gate::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let wakers: Vec<Waker> = ["first", "second", "third"]
            .into_iter()
            .map(|name| Waker::from(Arc::new(Named(name, Arc::clone(&log)))))
            .collect();
        let held = gate.try_acquire().unwrap();
        let mut waiters: Vec<_> = (0..3).map(|_| Box::pin(gate.acquire())).collect();
        for (w, waker) in waiters.iter_mut().zip(&wakers) {
            assert!(poll_with(w.as_mut(), waker).is_pending());
        }
        drop(held);
        assert_eq!(*log.lock().unwrap(), ["second", "first"]);
        // Woken early, not granted: it waits on (no runtime here, so no spin).
        assert!(poll_with(waiters[1].as_mut(), &wakers[1]).is_pending());
        let first = match poll_with(waiters[0].as_mut(), &wakers[0]) {
            Poll::Ready(permit) => permit,
            Poll::Pending => panic!("the first in line was granted"),
        };
        log.lock().unwrap().clear();
        drop(first);
        assert_eq!(*log.lock().unwrap(), ["third", "second"]);
        assert!(poll_with(waiters[1].as_mut(), &wakers[1]).is_ready());
    }

    /// On a multi-thread runtime the first in line spins for its grant before it
    /// parks; a spin that ends without one leaves the waker, and the grant wakes it.
    #[test]
    fn a_spin_without_a_grant_parks_and_the_grant_wakes_it() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let _in_runtime = rt.enter();
        let gate = Gate::new();
        let held = gate.try_acquire().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let waker = Waker::from(Arc::new(Named("waiter", Arc::clone(&log))));
        let mut waiter = Box::pin(gate.acquire());
        // Nobody releases: the spin ends (it is bounded) and the waiter parks.
        assert!(poll_with(waiter.as_mut(), &waker).is_pending());
        assert!(log.lock().unwrap().is_empty());
        drop(held);
        assert_eq!(*log.lock().unwrap(), ["waiter"], "woken once, by the grant");
        assert!(poll_with(waiter.as_mut(), &waker).is_ready());
    }

    /// Spinning waiters keep the gate's promises under threads: one holder at a
    /// time, and waiters served in the order they queued (each spawned once the
    /// one before has joined the queue, while the gate is held).
    #[test]
    fn spinning_waiters_keep_exclusion_and_order_under_threads() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        for _ in 0..20 {
            let gate = Arc::new(Gate::new());
            let inside = Arc::new(AtomicUsize::new(0));
            let served = Arc::new(Mutex::new(Vec::new()));
            rt.block_on(async {
                let held = gate.try_acquire().map(std::mem::forget);
                assert!(held.is_some());
                let mut handles = Vec::new();
                for i in 0..32 {
                    let (g, inside, served) = (gate.clone(), inside.clone(), served.clone());
                    handles.push(tokio::spawn(async move {
                        let _permit = g.acquire().await;
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "one holder");
                        served.lock().unwrap().push(i);
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }));
                    while gate.state.load(Ordering::Acquire) / WAITER < i + 1 {
                        tokio::task::yield_now().await;
                    }
                }
                gate.release();
                for h in handles {
                    h.await.unwrap();
                }
            });
            assert_eq!(*served.lock().unwrap(), (0..32).collect::<Vec<_>>());
            assert!(gate.try_acquire().is_some());
        }
    }
}
