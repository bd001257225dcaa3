//! [`Gate`]: a scope's queue. One run at a time, waiters served strictly in arrival
//! order, and an uncontended pass costs two atomic operations (no lock), since
//! nearly every call finds its scope idle.
//!
//! State: one word, bit 0 = held, the rest = number of waiters (×2). Waiters sit in a
//! FIFO behind a mutex; every change to the waiter count happens under it, so the
//! count in the word always equals the queue's length.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use crate::sync::lock;

const HELD: usize = 1;
const WAITER: usize = 2;

pub(crate) struct Gate {
    state: AtomicUsize,
    queue: Mutex<VecDeque<Arc<Slot>>>,
}

struct Slot {
    granted: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

/// Holding the gate; dropping it lets the next waiter in.
pub(crate) struct GatePermit<'a>(&'a Gate);

impl Drop for GatePermit<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

impl Gate {
    pub(crate) fn new() -> Self {
        Gate {
            state: AtomicUsize::new(0),
            queue: Mutex::new(VecDeque::new()),
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
    pub(crate) fn acquire(&self) -> Acquire<'_> {
        Acquire {
            gate: self,
            slot: None,
        }
    }

    fn release(&self) {
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
        match queue.pop_front() {
            Some(next) => {
                // Still held: ownership moves to `next`.
                self.state.fetch_sub(WAITER, Ordering::AcqRel);
                next.grant();
            }
            None => {
                self.state.fetch_and(!HELD, Ordering::Release);
            }
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

/// The future of [`Gate::acquire`].
pub(crate) struct Acquire<'a> {
    gate: &'a Gate,
    slot: Option<Arc<Slot>>,
}

impl<'a> Future for Acquire<'a> {
    type Output = GatePermit<'a>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<GatePermit<'a>> {
        let gate = self.gate;
        if let Some(slot) = &self.slot {
            *lock(&slot.waker) = Some(cx.waker().clone());
            if slot.granted.load(Ordering::Acquire) {
                self.slot = None;
                return Poll::Ready(GatePermit(gate));
            }
            return Poll::Pending;
        }
        if let Some(permit) = gate.try_acquire() {
            return Poll::Ready(permit);
        }
        let mut queue = lock(&gate.queue);
        let slot = Arc::new(Slot {
            granted: AtomicBool::new(false),
            waker: Mutex::new(Some(cx.waker().clone())),
        });
        queue.push_back(Arc::clone(&slot));
        let before = gate.state.fetch_add(WAITER, Ordering::AcqRel);
        if before & HELD == 0 {
            // Freed between our look and our enqueue: nobody will hand it on, so
            // take it for the first in line (which may be us).
            gate.state.fetch_or(HELD, Ordering::AcqRel);
            gate.hand_on(&mut queue);
        }
        drop(queue);
        if slot.granted.load(Ordering::Acquire) {
            return Poll::Ready(GatePermit(gate));
        }
        self.slot = Some(slot);
        Poll::Pending
    }
}

impl Drop for Acquire<'_> {
    fn drop(&mut self) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        let mut queue = lock(&self.gate.queue);
        if slot.granted.load(Ordering::Acquire) {
            // Granted but never seen: pass it on.
            self.gate.hand_on(&mut queue);
        } else if let Some(pos) = queue.iter().position(|s| Arc::ptr_eq(s, &slot)) {
            queue.remove(pos);
            self.gate.state.fetch_sub(WAITER, Ordering::AcqRel);
        }
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
}
