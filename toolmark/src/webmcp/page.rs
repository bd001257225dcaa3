//! Page sessions: one per loaded page, named by a token minted when the page
//! loads. Calls, confirmation answers and the tool stream are bound to it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, Notify};

use crate::sync::lock;
use crate::Decision;

/// One loaded page.
pub(crate) struct Page {
    /// The page's id for session-remembered decisions (not its token).
    pub(crate) session: Arc<str>,
    /// Whether the page has an `onConfirm` (as its latest stream said).
    confirm: AtomicBool,
    /// The latest stream's number: an older stream ends when it moves.
    stream: AtomicU64,
    /// Wakes a superseded stream.
    pub(crate) superseded: Notify,
    /// Streams open now (0 or 1 but for a moment while one replaces another).
    streams: AtomicUsize,
    /// Calls open now.
    calls: AtomicUsize,
    /// Open inline confirmations of this page's calls: confirm id → answer.
    confirms: Mutex<HashMap<String, oneshot::Sender<Decision>>>,
    last_seen: Mutex<Instant>,
}

impl Page {
    fn new() -> Self {
        Page {
            session: Arc::from(crate::confirm::new_confirm_id()),
            confirm: AtomicBool::new(false),
            stream: AtomicU64::new(0),
            superseded: Notify::new(),
            streams: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            confirms: Mutex::new(HashMap::new()),
            last_seen: Mutex::new(Instant::now()),
        }
    }

    pub(crate) fn has_confirm(&self) -> bool {
        self.confirm.load(Ordering::Acquire)
    }

    pub(crate) fn touch(&self) {
        *lock(&self.last_seen) = Instant::now();
    }

    /// Start a stream (ending the page's previous one); returns its number and a
    /// guard that counts it open.
    pub(crate) fn open_stream(self: &Arc<Self>, confirm: bool) -> (u64, StreamGuard) {
        self.confirm.store(confirm, Ordering::Release);
        let n = self.stream.fetch_add(1, Ordering::AcqRel) + 1;
        self.superseded.notify_waiters();
        self.streams.fetch_add(1, Ordering::AcqRel);
        (n, StreamGuard(Arc::clone(self)))
    }

    /// Whether stream `n` is still the page's latest.
    pub(crate) fn is_current(&self, n: u64) -> bool {
        self.stream.load(Ordering::Acquire) == n
    }

    /// Count one more open call, unless `max` are open.
    pub(crate) fn open_call(self: &Arc<Self>, max: usize) -> Option<CallGuard> {
        self.calls
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| CallGuard(Arc::clone(self)))
    }

    /// Wait for the page's answer to `confirm_id` (until the returned receiver
    /// is dropped, which withdraws the question).
    pub(crate) fn ask(self: &Arc<Self>, confirm_id: &str) -> Asked {
        let (tx, rx) = oneshot::channel();
        lock(&self.confirms).insert(confirm_id.to_owned(), tx);
        Asked {
            page: Arc::clone(self),
            id: confirm_id.to_owned(),
            rx,
        }
    }

    /// Deliver an answer to one of this page's open confirmations; `false` when
    /// this page has none with that id (another page's, answered, or gone).
    pub(crate) fn answer(&self, confirm_id: &str, decision: Decision) -> bool {
        match lock(&self.confirms).remove(confirm_id) {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    fn idle_for(&self, now: Instant) -> Option<Duration> {
        let busy =
            self.streams.load(Ordering::Acquire) > 0 || self.calls.load(Ordering::Acquire) > 0;
        (!busy).then(|| now.saturating_duration_since(*lock(&self.last_seen)))
    }
}

/// Counts a stream open while it lives.
pub(crate) struct StreamGuard(Arc<Page>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::AcqRel);
        self.0.touch();
    }
}

/// Counts a call open while it lives.
pub(crate) struct CallGuard(Arc<Page>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::AcqRel);
        self.0.touch();
    }
}

/// A question to the page; dropping it withdraws the question.
pub(crate) struct Asked {
    page: Arc<Page>,
    id: String,
    pub(crate) rx: oneshot::Receiver<Decision>,
}

impl Drop for Asked {
    fn drop(&mut self) {
        lock(&self.page.confirms).remove(&self.id);
    }
}

/// Every page of one [`WebMcp`](super::WebMcp), by token.
pub(crate) struct Pages {
    /// `std`'s hasher (randomly keyed): lookups by a secret key leak nothing
    /// usable through their timing.
    map: Mutex<HashMap<String, Arc<Page>>>,
}

/// Why no page could be made.
pub(crate) struct Full;

impl Pages {
    pub(crate) fn new() -> Self {
        Pages {
            map: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn get(&self, token: &str) -> Option<Arc<Page>> {
        let page = lock(&self.map).get(token).cloned()?;
        page.touch();
        Some(page)
    }

    /// A new page and its token. Pages idle (no stream, no call) for longer than
    /// `idle` are dropped first; at `max` pages the longest idle one makes room,
    /// and when every page is busy the new one is refused. `ended` gets the
    /// session id of each dropped page.
    pub(crate) fn create(
        &self,
        max: usize,
        idle: Duration,
        ended: impl Fn(&str),
    ) -> Result<(String, Arc<Page>), Full> {
        let now = Instant::now();
        let mut map = lock(&self.map);
        let mut gone: Vec<Arc<Page>> = Vec::new();
        map.retain(|_, p| {
            let keep = p.idle_for(now).is_none_or(|d| d < idle);
            if !keep {
                gone.push(Arc::clone(p));
            }
            keep
        });
        if map.len() >= max {
            let oldest = map
                .iter()
                .filter_map(|(k, p)| p.idle_for(now).map(|d| (d, k.clone())))
                .max_by_key(|(d, _)| *d)
                .map(|(_, k)| k);
            match oldest.and_then(|k| map.remove(&k)) {
                Some(p) => gone.push(p),
                None => return Err(Full),
            }
        }
        let token = crate::confirm::new_confirm_id();
        let page = Arc::new(Page::new());
        map.insert(token.clone(), Arc::clone(&page));
        drop(map);
        for p in gone {
            ended(&p.session);
        }
        Ok((token, page))
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.map).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_confirmation_is_answered_only_through_its_own_page() {
        let pages = Pages::new();
        let (_, a) = pages
            .create(8, Duration::from_secs(60), |_| {})
            .ok()
            .unwrap();
        let (_, b) = pages
            .create(8, Duration::from_secs(60), |_| {})
            .ok()
            .unwrap();
        let mut asked = a.ask("c1");
        assert!(
            !b.answer("c1", Decision::approve()),
            "another page's answer"
        );
        assert!(asked.rx.try_recv().is_err(), "nothing was delivered");
        assert!(a.answer("c1", Decision::reject_with("no")));
        assert_eq!(asked.rx.try_recv().unwrap().reason.as_deref(), Some("no"));
        // Single use.
        assert!(!a.answer("c1", Decision::approve()));
        // A withdrawn question takes no answer.
        drop(a.ask("c2"));
        assert!(!a.answer("c2", Decision::approve()));
    }

    #[test]
    fn open_calls_are_bounded_per_page() {
        let pages = Pages::new();
        let (_, p) = pages
            .create(8, Duration::from_secs(60), |_| {})
            .ok()
            .unwrap();
        let one = p.open_call(2).unwrap();
        let _two = p.open_call(2).unwrap();
        assert!(p.open_call(2).is_none());
        drop(one);
        assert!(p.open_call(2).is_some());
    }

    #[test]
    fn pages_are_bounded_and_busy_pages_are_never_evicted() {
        let pages = Pages::new();
        let ended = Mutex::new(Vec::new());
        let end = |s: &str| lock(&ended).push(s.to_owned());
        let (_, a) = pages.create(2, Duration::from_secs(600), end).ok().unwrap();
        let (_, b) = pages.create(2, Duration::from_secs(600), end).ok().unwrap();
        // Both busy: no room.
        let (_sa, _ga) = a.open_stream(false);
        let _gb = b.open_call(1).unwrap();
        assert!(pages.create(2, Duration::from_secs(600), end).is_err());
        // `a`'s stream ends: it is idle, and makes room.
        drop((_sa, _ga));
        let (_, _c) = pages.create(2, Duration::from_secs(600), end).ok().unwrap();
        assert_eq!(pages.len(), 2);
        assert_eq!(*lock(&ended), vec![a.session.to_string()]);
    }

    #[test]
    fn a_new_stream_supersedes_the_pages_previous_one() {
        let pages = Pages::new();
        let (_, p) = pages
            .create(8, Duration::from_secs(60), |_| {})
            .ok()
            .unwrap();
        let (first, _g1) = p.open_stream(true);
        assert!(p.is_current(first) && p.has_confirm());
        let (second, _g2) = p.open_stream(false);
        assert!(!p.is_current(first) && p.is_current(second) && !p.has_confirm());
    }
}
