//! Tool names per provider: a collision-free mapping from Toolmark's dotted names
//! (`billing.cards.add`) to each provider's allowed pattern, and back. The same
//! mapping serves WebMCP pages (`toolmark::webmcp`), whose browsers keep only
//! names matching `[A-Za-z0-9_.-]{1,128}`.

use rustc_hash::FxHashMap;

use super::Provider;

/// The longest name every provider accepts.
pub(crate) const MAX_NAME: usize = 64;
/// `_` + 8 hex digits.
const SUFFIX: usize = 9;

/// Whose name rules a mapping follows: a provider's, or a WebMCP browser's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// An LLM provider's function-calling format.
    Provider(Provider),
    /// `document.modelContext.registerTool` (Chromium keeps `[A-Za-z0-9_.-]{1,128}`
    /// and refuses any other name).
    #[cfg_attr(not(feature = "webmcp"), allow(dead_code))]
    WebMcp,
}

impl Target {
    const fn max(self) -> usize {
        match self {
            Target::Provider(_) => MAX_NAME,
            Target::WebMcp => 128,
        }
    }

    fn valid(self, name: &str) -> bool {
        match self {
            Target::Provider(p) => valid_name(p, name),
            Target::WebMcp => {
                (1..=self.max()).contains(&name.len())
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
            }
        }
    }

    /// Whether dots stay dots.
    fn keeps_dots(self) -> bool {
        matches!(self, Target::Provider(Provider::Gemini) | Target::WebMcp)
    }
}

/// Whether `name` is valid for `provider`.
///
/// OpenAI (both APIs) and Anthropic: `^[a-zA-Z0-9_-]{1,64}$`. Gemini: starts with a
/// letter or `_`, then `[a-zA-Z0-9_.:-]`, at most 64.
pub fn valid_name(provider: Provider, name: &str) -> bool {
    let len = name.len();
    if len == 0 || len > MAX_NAME {
        return false;
    }
    match provider {
        Provider::OpenAiChat | Provider::OpenAiResponses | Provider::Anthropic => name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        Provider::Gemini => {
            let first = name.as_bytes()[0];
            (first.is_ascii_alphabetic() || first == b'_')
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
        }
    }
}

/// The readable candidate: dots become `__` where dots are refused; any other
/// refused byte becomes `_`; Gemini names that start with a digit or `-` get a `_`
/// prefix. Validity (length) is checked by the caller.
fn candidate(target: Target, name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    if target == Target::Provider(Provider::Gemini) {
        let first = name.bytes().next();
        if !first.is_some_and(|b| b.is_ascii_alphabetic() || b == b'_') {
            out.push('_');
        }
    }
    for c in name.chars() {
        match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => out.push(c),
            '.' if target.keeps_dots() => out.push('.'),
            '.' => out.push_str("__"),
            _ => out.push('_'),
        }
    }
    out
}

/// FNV-1a, 64 bits: stable across builds and platforms (unlike `std`'s hasher).
fn fnv1a(bytes: &[u8], salt: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in salt.to_le_bytes().iter().chain(bytes) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The shortened form: the candidate cut to fit, `_`, 8 hex digits of the full
/// name's hash. Stable: it depends only on the name (and `salt`, 0 unless two
/// hashes collide).
fn hashed(target: Target, name: &str, salt: u32) -> String {
    let mut base = candidate(target, name);
    let keep = target.max() - SUFFIX;
    if base.len() > keep {
        base.truncate(keep); // ASCII only, so any index is a char boundary
    }
    if base.is_empty() {
        base.push('t');
    }
    let h = fnv1a(name.as_bytes(), salt);
    format!("{base}_{:08x}", (h >> 32) as u32 ^ h as u32)
}

/// A manifest's names for one provider, both ways.
#[derive(Clone, Debug, Default)]
pub struct NameMap {
    to_provider: FxHashMap<String, String>,
    to_toolmark: FxHashMap<String, String>,
}

impl NameMap {
    /// The mapping for `names` (Toolmark full names, distinct) for `provider`.
    ///
    /// Each name keeps its readable form (`billing__cards__add` for OpenAI and
    /// Anthropic, `billing.cards.add` for Gemini) when that form is valid and no
    /// other name in the set has the same form; otherwise it is shortened to a
    /// stable `…_1a2b3c4d` hash suffix. The result is valid for the provider,
    /// collision-free, and maps back exactly.
    pub fn new<'a>(provider: Provider, names: impl IntoIterator<Item = &'a str>) -> NameMap {
        Self::for_target(Target::Provider(provider), names)
    }

    /// The mapping for `names` under `target`'s rules (see [`new`](Self::new)).
    pub(crate) fn for_target<'a>(
        target: Target,
        names: impl IntoIterator<Item = &'a str>,
    ) -> NameMap {
        let names: Vec<&str> = names.into_iter().collect();
        // `None`: the readable form; `Some(k)`: the hash with salt `k`.
        let mut salts: Vec<Option<u32>> = names
            .iter()
            .map(|n| (!target.valid(&candidate(target, n))).then_some(0))
            .collect();
        let form = |i: usize, salt: Option<u32>| match salt {
            None => candidate(target, names[i]),
            Some(k) => hashed(target, names[i], k),
        };
        let mut chosen: Vec<String> = (0..names.len()).map(|i| form(i, salts[i])).collect();
        // Every name whose form is shared moves on (readable → hash → salted hash)
        // until all differ; hashes of distinct names differ but by chance, so this ends.
        loop {
            let mut seen: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
            for (i, c) in chosen.iter().enumerate() {
                seen.entry(c.as_str()).or_default().push(i);
            }
            let clashes: Vec<usize> = seen
                .into_values()
                .filter(|v| v.len() > 1)
                .flatten()
                .collect();
            if clashes.is_empty() {
                break;
            }
            for i in clashes {
                salts[i] = Some(salts[i].map_or(0, |k| k + 1));
                chosen[i] = form(i, salts[i]);
            }
        }
        let mut map = NameMap::default();
        map.to_provider.reserve(names.len());
        map.to_toolmark.reserve(names.len());
        for (n, c) in names.iter().zip(chosen) {
            map.to_toolmark.insert(c.clone(), (*n).to_owned());
            map.to_provider.insert((*n).to_owned(), c);
        }
        map
    }

    /// The provider's name for a Toolmark tool.
    pub fn to_provider(&self, toolmark_name: &str) -> Option<&str> {
        self.to_provider.get(toolmark_name).map(String::as_str)
    }

    /// The Toolmark tool a provider's name stands for.
    pub fn to_toolmark(&self, provider_name: &str) -> Option<&str> {
        self.to_toolmark.get(provider_name).map(String::as_str)
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.to_provider.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.to_provider.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_become_double_underscores_where_refused() {
        let m = NameMap::new(Provider::OpenAiChat, ["billing.cards.add", "greet"]);
        assert_eq!(
            m.to_provider("billing.cards.add"),
            Some("billing__cards__add")
        );
        assert_eq!(
            m.to_toolmark("billing__cards__add"),
            Some("billing.cards.add")
        );
        let g = NameMap::new(Provider::Gemini, ["billing.cards.add", "1st"]);
        assert_eq!(
            g.to_provider("billing.cards.add"),
            Some("billing.cards.add")
        );
        assert_eq!(g.to_provider("1st"), Some("_1st"));
    }

    #[test]
    fn clashing_forms_both_get_stable_hash_suffixes() {
        let m = NameMap::new(Provider::Anthropic, ["a.b", "a__b"]);
        let (x, y) = (
            m.to_provider("a.b").unwrap(),
            m.to_provider("a__b").unwrap(),
        );
        assert_ne!(x, y);
        assert!(x.starts_with("a__b_") && x.len() == 4 + SUFFIX, "{x}");
        // Stable: the same set in another order gives the same names.
        let again = NameMap::new(Provider::Anthropic, ["a__b", "a.b"]);
        assert_eq!(again.to_provider("a.b"), Some(x));
    }

    #[test]
    fn webmcp_names_keep_dots_and_cut_at_128() {
        let long = format!("{}.tool", "s".repeat(200));
        let m = NameMap::for_target(
            Target::WebMcp,
            [
                "billing.cards.add",
                "caf\u{e9}.x",
                long.as_str(),
                "a b",
                "a_b",
            ],
        );
        assert_eq!(
            m.to_provider("billing.cards.add"),
            Some("billing.cards.add")
        );
        let cafe = m.to_provider("caf\u{e9}.x").unwrap();
        assert_eq!(cafe, "caf_.x");
        let short = m.to_provider(&long).unwrap();
        assert_eq!(short.len(), 128);
        // `a b` and `a_b` would both be `a_b`: neither keeps it, both map back.
        let (x, y) = (m.to_provider("a b").unwrap(), m.to_provider("a_b").unwrap());
        assert_ne!(x, y);
        for n in [
            "billing.cards.add",
            "caf\u{e9}.x",
            long.as_str(),
            "a b",
            "a_b",
        ] {
            let w = m.to_provider(n).unwrap();
            assert!(Target::WebMcp.valid(w), "{w}");
            assert_eq!(m.to_toolmark(w), Some(n));
        }
    }

    #[test]
    fn long_names_are_cut_with_a_hash_suffix() {
        let long = format!("{}.tool", "s".repeat(80));
        let m = NameMap::new(Provider::OpenAiResponses, [long.as_str()]);
        let short = m.to_provider(&long).unwrap();
        assert_eq!(short.len(), MAX_NAME);
        assert!(valid_name(Provider::OpenAiResponses, short));
        assert_eq!(m.to_toolmark(short), Some(long.as_str()));
    }
}
