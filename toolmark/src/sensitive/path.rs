//! Sensitive paths and concrete locations.
//!
//! The grammar of a sensitive path, `seg(.seg|[])*` (`cards[].cvc`), is
//! `toolmark_syntax::path`, the one parser the `#[tool]` macro checks paths with at
//! compile time: [`SensitivePath::parse`] is that parser. A path's segments are
//! names and `[]`, which steps into every element of an array and every value of a
//! map.
//!
//! A *location* is a concrete place in a value, written the way [`Issue`](crate::Issue)
//! paths are: dotted, array indices as numbers (`cards.0.cvc`, `""` for the root).

use std::fmt;

pub(crate) use toolmark_syntax::path::{to_string as segs_to_string, PathError, Seg};

/// A parsed sensitive path such as `cards[].cvc`.
///
/// Its [`Display`](fmt::Display) is the canonical text form, which
/// [`SensitivePath::parse`] reads back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SensitivePath {
    /// The segments, in order. Empty only for the internal "whole input" path.
    segs: Vec<Seg>,
}

impl SensitivePath {
    /// Parses `s` with the shared grammar (`toolmark_syntax::path::parse`).
    pub(crate) fn parse(s: &str) -> Result<SensitivePath, PathError> {
        toolmark_syntax::path::parse(s).map(|segs| SensitivePath { segs })
    }

    /// Builds a path from segments (already checked or resolved).
    pub(crate) fn from_segs(segs: Vec<Seg>) -> SensitivePath {
        SensitivePath { segs }
    }

    /// The internal path that names the whole input.
    pub(super) const ROOT: SensitivePath = SensitivePath { segs: Vec::new() };

    /// The segments of this path.
    pub(crate) fn segs(&self) -> &[Seg] {
        &self.segs
    }
}

impl fmt::Display for SensitivePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        toolmark_syntax::path::write_segs(f, &self.segs)
    }
}

/// One step of a concrete location inside a JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    /// A member of an object.
    Key(&'a str),
    /// An element of an array.
    Index(usize),
    /// A step of a location string: an object key or (when numeric) an array index.
    Text(&'a str),
}

/// The array index `text` names: canonical decimal (`0`, `12`, not `012` or `+1`).
pub(crate) fn index_of(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    text.parse().ok()
}

/// Matching a path's segment against one step of a concrete location.
pub(crate) trait SegMatch {
    /// Does this segment match `step`?
    ///
    /// A `Key` matches an object member of that name and, when its text is a number, the
    /// array element of that index. `Any` matches any array element and any member of an
    /// object (a map's values; the path was checked against the schema at
    /// registration). A location string step matches a `Key` of the same text, and
    /// `Any` always; the step `?` (an unknown step in a `serde_path_to_error` path)
    /// matches every segment.
    fn matches(&self, step: Step<'_>) -> bool;
}

impl SegMatch for Seg {
    fn matches(&self, step: Step<'_>) -> bool {
        match (self, step) {
            (Seg::Key(k), Step::Key(s)) => k == s,
            (Seg::Key(k), Step::Index(i)) => index_of(k) == Some(i),
            (Seg::Any, _) => true,
            (_, Step::Text("?")) => true,
            (Seg::Key(k), Step::Text(s)) => k == s,
        }
    }
}

/// Splits a location into its steps.
///
/// Dotted (`cards.0.cvc`) is the form [`Issue`](crate::Issue) paths use; the
/// `serde_path_to_error` form (`cards[0].cvc`) is read as well. `""` is the root (no
/// steps).
pub(crate) fn location_steps(location: &str) -> Vec<&str> {
    let mut out = Vec::new();
    if location.is_empty() {
        return out;
    }
    for piece in location.split('.') {
        match bracket_split(piece) {
            Some((name, rest)) => {
                if !name.is_empty() {
                    out.push(name);
                }
                let mut rest = rest;
                while let Some(r) = rest.strip_prefix('[') {
                    let Some(end) = r.find(']') else { break };
                    out.push(&r[..end]);
                    rest = &r[end + 1..];
                }
            }
            None => out.push(piece),
        }
    }
    out
}

/// Splits `name[0][1]` into `("name", "[0][1]")` when the piece ends in well-formed
/// bracket groups; `None` otherwise.
fn bracket_split(piece: &str) -> Option<(&str, &str)> {
    let open = piece.find('[')?;
    let (name, mut rest) = piece.split_at(open);
    if name.contains(']') {
        return None;
    }
    while !rest.is_empty() {
        let r = rest.strip_prefix('[')?;
        let end = r.find(']')?;
        if r[..end].contains('[') {
            return None;
        }
        rest = &r[end + 1..];
    }
    Some((name, &piece[open..]))
}

/// Appends one step to a dotted location.
pub(crate) fn push_location(loc: &mut String, step: &str) {
    if !loc.is_empty() {
        loc.push('.');
    }
    loc.push_str(step);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Seg {
        Seg::Key(k.to_owned())
    }

    // The grammar's own tables and properties (good and bad paths, positions,
    // canonical printing) are toolmark-syntax's tests: the one parser.

    #[test]
    fn parse_is_the_shared_grammar() {
        let p = SensitivePath::parse("cards[].cvc").unwrap();
        assert_eq!(p.segs(), [key("cards"), Seg::Any, key("cvc")]);
        assert_eq!(p.to_string(), "cards[].cvc");
        assert_eq!(
            SensitivePath::parse("a[0]").unwrap_err(),
            toolmark_syntax::path::parse("a[0]").unwrap_err()
        );
    }

    #[test]
    fn locations_split_dotted_and_bracketed_forms() {
        assert!(location_steps("").is_empty());
        assert_eq!(location_steps("cards.0.cvc"), ["cards", "0", "cvc"]);
        assert_eq!(location_steps("cards[0].cvc"), ["cards", "0", "cvc"]);
        assert_eq!(location_steps("m[1][2]"), ["m", "1", "2"]);
        assert_eq!(location_steps("[3].a"), ["3", "a"]);
        assert_eq!(location_steps("a[b"), ["a[b"]);
        assert_eq!(location_steps("a..b"), ["a", "", "b"]);
    }

    #[test]
    fn segments_match_steps() {
        assert!(Seg::Any.matches(Step::Index(3)));
        // `[]` is also every value of a map.
        assert!(Seg::Any.matches(Step::Key("3")));
        assert!(Seg::Any.matches(Step::Key("KEY")));
        assert!(Seg::Any.matches(Step::Text("3")));
        assert!(Seg::Any.matches(Step::Text("x")));
        assert!(key("0").matches(Step::Index(0)));
        assert!(key("0").matches(Step::Text("0")));
        assert!(key("x").matches(Step::Text("?")));
        assert!(Seg::Any.matches(Step::Text("?")));
        assert!(!key("x").matches(Step::Index(0)));
        assert_eq!(index_of("12"), Some(12));
        assert_eq!(index_of("012"), None);
        assert_eq!(index_of("-1"), None);
        assert_eq!(index_of(""), None);
        assert_eq!(index_of("99999999999999999999999999"), None);
    }
}
