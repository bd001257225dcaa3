//! Test-side `tracing` captures, installed for one thread, that see every event
//! they should while other tests run beside them.
//!
//! tracing caches each callsite's interest, and the most verbose level any
//! subscriber wants, for the whole process. With only a thread-local subscriber,
//! a test on another thread (no subscriber) that reaches a callsite first leaves
//! it cached as "never", and a capture on this thread misses its events: a
//! capture that asserts a line was logged fails, one that asserts a secret was
//! not logged passes without having looked. [`scoped`] first installs, once, a
//! global subscriber that wants everything at TRACE and keeps nothing, which
//! pins both caches; every capture in the suite goes through it.
//!
//! Shared by several test targets (`#[path]`): not every target uses every item.
#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};

use tracing::subscriber::DefaultGuard;
use tracing_subscriber::layer::SubscriberExt;

/// Install `subscriber` for this thread until the guard drops (see the module).
pub fn scoped<S>(subscriber: S) -> DefaultGuard
where
    S: tracing::Subscriber + Send + Sync + 'static,
{
    static GLOBAL: std::sync::Once = std::sync::Once::new();
    GLOBAL.call_once(|| {
        let _ = tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(tracing_subscriber::filter::LevelFilter::TRACE),
        );
    });
    tracing::subscriber::set_default(subscriber)
}

/// Everything a formatting subscriber wrote, as text.
#[derive(Clone, Default)]
pub struct Logs(pub Arc<Mutex<Vec<u8>>>);

impl Logs {
    /// Everything written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }

    /// Everything written since the last `take`.
    pub fn take(&self) -> String {
        let mut out = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&out).into_owned();
        out.clear();
        text
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// A formatting subscriber at `level` for every target, for this thread (a
/// current-thread runtime polls every task it spawns there), writing to the
/// returned [`Logs`].
///
/// Without timestamps: the tests look for a secret's digits in what was logged,
/// and a timestamp's microseconds carry any four digits by chance (CI once found
/// "4111" in `08:29:42.034111Z`).
pub fn capture_at(level: tracing::Level) -> (Logs, DefaultGuard) {
    let out = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .without_time()
        .with_max_level(level)
        .with_ansi(false)
        .with_writer(out.clone())
        .finish();
    (out, scoped(subscriber))
}

#[cfg(test)]
mod self_check {
    use super::*;

    /// One callsite, reached from two threads.
    fn probe(n: u32) {
        tracing::info!(n, "logs self-check probe");
    }

    #[test]
    fn a_callsite_first_reached_on_a_thread_without_a_subscriber_is_still_captured() {
        let (logs, _guard) = capture_at(tracing::Level::INFO);
        // Another thread, no subscriber of its own, reaches the callsite first
        // (so registers it and caches its interest).
        std::thread::spawn(|| probe(1)).join().unwrap();
        probe(2);
        let text = logs.take();
        assert!(
            text.contains("logs self-check probe") && text.contains("n=2"),
            "{text:?}"
        );
        assert!(
            !text.contains("n=1"),
            "the other thread's event is not this thread's: {text:?}"
        );
    }
}
