//! A `tracing` subscriber that writes every event and span field (at every level,
//! TRACE included) to a shared buffer, so tests can check what reached the logs.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Everything logged while a [`Capture`] was the default subscriber.
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<Mutex<String>>);

impl Logs {
    /// The text logged so far.
    pub(crate) fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

/// The subscriber; install it with `tracing::subscriber::set_default`.
pub(crate) struct Capture {
    logs: Logs,
    next: AtomicU64,
}

impl Capture {
    pub(crate) fn new() -> (Capture, Logs) {
        let logs = Logs::default();
        (
            Capture {
                logs: logs.clone(),
                next: AtomicU64::new(1),
            },
            logs,
        )
    }
}

struct Writer<'a>(&'a mut String);

impl Visit for Writer<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut logs = self.logs.0.lock().unwrap();
        let _ = write!(logs, "\nspan {}", span.metadata().name());
        span.record(&mut Writer(&mut logs));
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed))
    }
    fn record(&self, _: &Id, values: &Record<'_>) {
        values.record(&mut Writer(&mut self.logs.0.lock().unwrap()));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut logs = self.logs.0.lock().unwrap();
        let _ = write!(logs, "\n{}", event.metadata().level());
        event.record(&mut Writer(&mut logs));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
