//! The secret-canary harness: plant marked secrets, drive a surface end to end, and
//! fail if any part of a secret appears in anything an observer can read.
//!
//! ```ignore
//! #[path = "../support/canary.rs"]
//! mod canary;
//! use canary::Canary;
//!
//! let mut canary = Canary::new();
//! let cvc = canary.secret();            // a fresh marked secret, remembered
//! let trace = canary::capture();        // every tracing event and span at TRACE
//! // … send `cvc` through the surface under test …
//! canary.assert_absent("outcome", serde_json::to_string(&outcome).unwrap());
//! canary.assert_absent("trace", trace.take());
//! ```
//!
//! A secret is 20 random letters and digits after a marker, so no text holds one by
//! chance; [`Canary::check`] looks for each secret, its JSON-escaped form, and every
//! run of [`WINDOW`] of its characters (a secret cut short, or split by a
//! placeholder, still fails). [`Canary::variant`] makes secrets with characters
//! that escaping changes (quotes, backslashes, non-ASCII), to plant as is or inside
//! a longer value ([`Canary::embedded`]).
//!
//! The tracing capture ([`capture`]) is a `tracing` subscriber at TRACE for every
//! target (the runtime's and its dependencies', such as `rmcp`'s) that writes each
//! event's and span's name and fields; install it for the thread that drives the
//! surface (a current-thread runtime polls every task there).
//!
//! Shared by several test targets (`#[path]`): not every target uses every item.
#![allow(dead_code, unreachable_pub, unused_imports)]

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A secret's fragment that counts as a leak (in characters).
pub const WINDOW: usize = 8;

/// A fragment of a secret of digits only that counts as a leak.
pub const DIGIT_WINDOW: usize = 14;

/// The marker every secret starts with.
pub const MARKER: &str = "cnry";

/// Planted secrets, and the check that none reached an observer.
#[derive(Debug, Default, Clone)]
pub struct Canary {
    secrets: Vec<String>,
    state: u64,
    /// The search for the secrets planted so far, built on the first check after a
    /// change (a property test's case checks many texts with the same secrets).
    search: Arc<Mutex<Option<Search>>>,
}

/// Every form of every secret, in one automaton.
#[derive(Debug)]
struct Search {
    secrets: Vec<String>,
    /// For each pattern, the secret it is a form of.
    owners: Vec<usize>,
    patterns: Vec<String>,
    automaton: aho_corasick::AhoCorasick,
}

impl Search {
    fn new(secrets: &[String]) -> Result<Search, String> {
        let mut owners = Vec::new();
        let mut patterns = Vec::new();
        for (i, secret) in secrets.iter().enumerate() {
            for form in forms(secret) {
                owners.push(i);
                patterns.push(form);
            }
        }
        // A contiguous NFA: quick to build (a new set of secrets per case) and one
        // linear pass per text.
        let automaton = aho_corasick::AhoCorasick::builder()
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(&patterns)
            .map_err(|e| format!("the canary's patterns do not build: {e}"))?;
        Ok(Search {
            secrets: secrets.to_vec(),
            owners,
            patterns,
            automaton,
        })
    }
}

/// A process-wide counter, so two canaries never plant the same secret.
static SEEDS: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

impl Canary {
    /// A canary with no secret planted yet.
    pub fn new() -> Canary {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default();
        Canary::with_seed(t ^ SEEDS.fetch_add(0x2545_f491_4f6c_dd1d, Ordering::Relaxed))
    }

    /// A canary whose secrets follow from `seed` (a property test's case).
    pub fn with_seed(seed: u64) -> Canary {
        Canary {
            secrets: Vec::new(),
            state: seed | 1,
            search: Arc::default(),
        }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn random_text(&mut self, len: usize) -> String {
        const CHARS: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
        (0..len)
            .map(|_| CHARS[(self.next() % CHARS.len() as u64) as usize] as char)
            .collect()
    }

    /// A fresh secret (`cnry` and 20 random letters and digits), remembered.
    pub fn secret(&mut self) -> String {
        let s = format!("{MARKER}{}", self.random_text(20));
        self.secrets.push(s.clone());
        s
    }

    /// A fresh secret of kind `kind` (0: plain; 1: with a quote and a backslash;
    /// 2: with non-ASCII and a newline; 3: digits only, like a card number),
    /// remembered.
    pub fn variant(&mut self, kind: u8) -> String {
        let s = match kind % 4 {
            0 => format!("{MARKER}{}", self.random_text(20)),
            1 => format!(
                "{MARKER}{}\"q\\{}",
                self.random_text(10),
                self.random_text(10)
            ),
            2 => format!(
                "{MARKER}{}é\n✓{}",
                self.random_text(10),
                self.random_text(10)
            ),
            _ => {
                let digits: String = (0..19)
                    .map(|_| char::from(b'0' + (self.next() % 10) as u8))
                    .collect();
                format!("9{digits}")
            }
        };
        self.secrets.push(s.clone());
        s
    }

    /// `secret` inside a longer value (a sensitive value that holds the secret as a
    /// substring), as `kind` says (0: as is; 1: after text; 2: before text; 3: in
    /// the middle).
    pub fn embedded(secret: &str, kind: u8) -> String {
        match kind % 4 {
            0 => secret.to_owned(),
            1 => format!("card {secret}"),
            2 => format!("{secret} (main)"),
            _ => format!("x-{secret}-y"),
        }
    }

    /// Remember `secret` too (a value the test made itself).
    pub fn plant(&mut self, secret: impl Into<String>) {
        self.secrets.push(secret.into());
    }

    /// The secrets planted so far.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// Forget every secret (a property test reusing its fixtures per case).
    pub fn clear(&mut self) {
        self.secrets.clear();
    }

    /// `Err` naming the first secret (or fragment of one) found in `bytes`.
    ///
    /// Every form of every secret is looked for in one pass over `bytes` (an
    /// Aho–Corasick automaton): the observers' texts are long (a whole TRACE
    /// capture), and one `contains` per form and secret made the property tests
    /// spend most of their time here.
    pub fn check(&self, what: &str, bytes: impl AsRef<[u8]>) -> Result<(), String> {
        let text = String::from_utf8_lossy(bytes.as_ref());
        if self.secrets.is_empty() {
            return Ok(());
        }
        let mut search = self.search.lock().unwrap_or_else(|e| e.into_inner());
        if search.as_ref().is_none_or(|s| s.secrets != self.secrets) {
            *search = Some(Search::new(&self.secrets)?);
        }
        let search = search.as_ref().expect("built above");
        let Some(m) = search.automaton.find(text.as_ref()) else {
            return Ok(());
        };
        let secret = &search.secrets[search.owners[m.pattern().as_usize()]];
        let found = &search.patterns[m.pattern().as_usize()];
        let at = m.start();
        let mut from = at.saturating_sub(80);
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        let mut to = (at + found.len() + 80).min(text.len());
        while !text.is_char_boundary(to) {
            to += 1;
        }
        Err(format!(
            "secret {secret:?} leaked in {what} (as {found:?}): …{}…",
            &text[from..to]
        ))
    }

    /// Panics naming the first secret (or fragment of one) found in `bytes`.
    #[track_caller]
    pub fn assert_absent(&self, what: &str, bytes: impl AsRef<[u8]>) {
        if let Err(e) = self.check(what, bytes) {
            panic!("{e}");
        }
    }

    /// [`assert_absent`](Self::assert_absent) on the JSON and the `Debug` of `value`.
    #[track_caller]
    pub fn assert_absent_in<T: serde::Serialize + std::fmt::Debug>(&self, what: &str, value: &T) {
        let json = serde_json::to_string(value).unwrap_or_default();
        self.assert_absent(what, json);
        self.assert_absent(&format!("{what} (Debug)"), format!("{value:?}"));
    }
}

/// The forms of `secret` an observer's text could hold: itself, JSON-escaped,
/// `Debug`-escaped, and every [`WINDOW`]-character run of each (for secrets that
/// long: a shorter one counts whole only). A secret of digits only counts by runs
/// of [`DIGIT_WINDOW`] (shorter runs of digits turn up in any timestamp).
fn forms(secret: &str) -> Vec<String> {
    let window = if secret.bytes().all(|b| b.is_ascii_digit()) {
        DIGIT_WINDOW
    } else {
        WINDOW
    };
    let json = serde_json::to_string(secret).unwrap_or_default();
    let json = json[1..json.len() - 1].to_owned();
    let debug = format!("{secret:?}");
    let debug = debug[1..debug.len() - 1].to_owned();
    let mut out = vec![secret.to_owned(), json, debug];
    let whole = out.clone();
    for f in whole {
        let chars: Vec<char> = f.chars().collect();
        if chars.len() > window {
            for w in chars.windows(window) {
                let piece: String = w.iter().collect();
                // A run of mostly escape text is no evidence.
                if piece.chars().filter(char::is_ascii_alphanumeric).count() >= window - 3 {
                    out.push(piece);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

// Tracing capture

/// A shared text buffer a [`CaptureLayer`] writes to.
type Buffer = Arc<Mutex<String>>;

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

/// A layer writing every event and span (name, target, fields, later records).
pub struct CaptureLayer(Buffer);

impl CaptureLayer {
    fn push(&self, mut line: String) {
        line.push('\n');
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_str(&line);
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CaptureLayer {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut line = format!(
            "span {} {}",
            attrs.metadata().target(),
            attrs.metadata().name()
        );
        attrs.record(&mut Fields(&mut line));
        self.push(line);
    }

    fn on_record(
        &self,
        _id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut line = "record".to_owned();
        values.record(&mut Fields(&mut line));
        self.push(line);
    }

    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut line = format!(
            "event {} {}",
            event.metadata().level(),
            event.metadata().target()
        );
        event.record(&mut Fields(&mut line));
        self.push(line);
    }
}

/// A tracing capture: every `tracing` event and span at TRACE, of every target, on
/// the thread that made it, until it drops.
pub struct Capture {
    buffer: Buffer,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Capture {
    /// Everything captured since the last `take`.
    pub fn take(&self) -> String {
        std::mem::take(&mut *self.buffer.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Capture every `tracing` event and span at TRACE, of every target, on this
/// thread (see [`Capture`]).
pub fn capture() -> Capture {
    use tracing_subscriber::layer::SubscriberExt;
    let buffer = Buffer::default();
    let subscriber = tracing_subscriber::registry()
        .with(CaptureLayer(buffer.clone()))
        .with(tracing_subscriber::filter::LevelFilter::TRACE);
    Capture {
        buffer,
        // Through the suite's one installer: see `logs.rs` for why.
        _guard: crate::logs::scoped(subscriber),
    }
}

#[cfg(test)]
mod self_check {
    use super::*;

    #[test]
    fn a_secret_whole_escaped_or_in_part_is_found() {
        let mut c = Canary::with_seed(7);
        let s = c.secret();
        assert!(c.check("x", format!("a {s} b")).is_err());
        assert!(c.check("x", &s[..12]).is_err());
        assert!(c.check("x", &s[8..]).is_err());
        assert!(c.check("x", "nothing here [redacted]").is_ok());
        let q = c.variant(1);
        assert!(c.check("x", serde_json::to_string(&q).unwrap()).is_err());
    }
}
