//! Wall time for confirmation expiry: [`Clock`], [`SystemClock`], [`ManualClock`].
//!
//! Toolmark uses two clocks on purpose. Call deadlines run on tokio's clock (so a
//! test can use `#[tokio::test(start_paused = true)]`). Whether a confirmation has
//! expired is decided by the injected [`Clock`], read at approval time: timers are only
//! hints, because a laptop that slept or a throttled tab delays them.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

/// A source of wall time.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> SystemTime;

    /// A receiver that changes whenever this clock jumps (a [`ManualClock`] is
    /// advanced), so the expiry sweeper can look again without a timer. `None` for
    /// clocks that only move with real time.
    fn changes(&self) -> Option<watch::Receiver<SystemTime>> {
        None
    }
}

/// The system's wall clock ([`SystemTime::now`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that moves only when told to: for tests of expiry.
///
/// Cloning gives another handle to the same clock.
///
/// ```
/// use std::time::Duration;
/// use toolmark::clock::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let start = clock.now();
/// clock.advance(Duration::from_secs(601));
/// assert_eq!(clock.now().duration_since(start).unwrap(), Duration::from_secs(601));
/// ```
#[derive(Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

struct ManualInner {
    now: Mutex<SystemTime>,
    tx: watch::Sender<SystemTime>,
}

impl ManualClock {
    /// A manual clock starting at 2026-01-01T00:00:00Z.
    pub fn new() -> Self {
        Self::starting_at(SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600))
    }

    /// A manual clock starting at `start`.
    pub fn starting_at(start: SystemTime) -> Self {
        let (tx, _) = watch::channel(start);
        ManualClock {
            inner: Arc::new(ManualInner {
                now: Mutex::new(start),
                tx,
            }),
        }
    }

    /// Move the clock forward by `by`. No timer fires; Toolmark's expiry sweeper is
    /// woken and looks at the new time.
    pub fn advance(&self, by: Duration) {
        let now = {
            let mut now = self.inner.now.lock().unwrap_or_else(|e| e.into_inner());
            *now += by;
            *now
        };
        self.inner.tx.send_replace(now);
    }

    /// Set the clock to `to` (which may be earlier than now).
    pub fn set(&self, to: SystemTime) {
        *self.inner.now.lock().unwrap_or_else(|e| e.into_inner()) = to;
        self.inner.tx.send_replace(to);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ManualClock").field(&self.now()).finish()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.inner.now.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn changes(&self) -> Option<watch::Receiver<SystemTime>> {
        Some(self.inner.tx.subscribe())
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> SystemTime {
        (**self).now()
    }
    fn changes(&self) -> Option<watch::Receiver<SystemTime>> {
        (**self).changes()
    }
}

/// Serde helper: a `SystemTime` as an RFC 3339 string with milliseconds (UTC).
pub(crate) mod rfc3339 {
    use std::time::SystemTime;

    use serde::Serializer;

    pub(crate) fn serialize<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_rfc3339_millis(*t))
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<SystemTime, D::Error> {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
        humantime::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}
