//! The sensitive-path grammar and concrete locations.
//!
//! A sensitive path is `seg(.seg|[])*`:
//!
//! - a `seg` is one or more of `[A-Za-z0-9_-]`, optionally preceded by `r#` (a Rust raw
//!   identifier such as `r#type`; only [`NameMode::Rust`](super::NameMode) strips it).
//!   A JSON property whose name has other characters (`$id`, `first name`, `a.b`)
//!   cannot be named by a sensitive path;
//! - `[]` steps into every element of an array (`cards[].cvc`, `matrix[][]`) and into
//!   every value of a map (`wallet[].cvc` on a `HashMap<String, Card>`);
//! - a path starts with a `seg`: `[]` alone (a whole top-level array) is not a path,
//!   because a tool's input is always an object. Indices (`a[0]`), empty segments
//!   (`a..b`, `.a`, `a.`), whitespace and anything after `[]` other than `.` or `[]`
//!   are errors.
//!
//! A *location* is a concrete place in a value, written the way [`Issue`](crate::Issue)
//! paths are: dotted, array indices as numbers (`cards.0.cvc`, `""` for the root).

use std::fmt;

/// One segment of a [`SensitivePath`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Seg {
    /// A property name (`cvc`), or a Rust field name before it is resolved.
    Key(String),
    /// `[]`: any element of an array.
    Any,
}

/// A parsed sensitive path such as `cards[].cvc`.
///
/// Its [`Display`](fmt::Display) is the canonical text form, which
/// [`SensitivePath::parse`] reads back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SensitivePath {
    /// The segments, in order. Empty only for the internal "whole input" path.
    segs: Vec<Seg>,
}

/// Why a sensitive path could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PathError {
    /// The text that was parsed.
    pub(crate) path: String,
    /// Byte offset of the problem in `path`.
    pub(crate) position: usize,
    /// What is wrong there.
    pub(crate) message: String,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sensitive path {:?} is malformed at position {}: {}",
            self.path, self.position, self.message
        )
    }
}

impl std::error::Error for PathError {}

/// Is `b` allowed in a segment?
fn is_seg_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Describes the character at byte `pos` of `s` for an error message.
fn describe_at(s: &str, pos: usize) -> String {
    match s.get(pos..).and_then(|rest| rest.chars().next()) {
        None => "the end of the path".to_owned(),
        Some(c) if c.is_whitespace() => format!("whitespace ({c:?})"),
        Some(c) => format!("{:?}", c.to_string()),
    }
}

impl SensitivePath {
    /// Parses `s` (see the [module docs](self) for the grammar).
    pub(crate) fn parse(s: &str) -> Result<SensitivePath, PathError> {
        let err = |position: usize, message: String| PathError {
            path: s.to_owned(),
            position,
            message,
        };
        let bytes = s.as_bytes();
        if bytes.is_empty() {
            return Err(err(0, "a sensitive path cannot be empty".to_owned()));
        }
        let mut segs = Vec::new();
        let mut i = 0;
        // `true` when the next thing must be a segment name (start, or after '.').
        let mut want_seg = true;
        while i < bytes.len() {
            if want_seg {
                let start = i;
                if bytes[i..].starts_with(b"r#") {
                    i += 2;
                }
                let name_start = i;
                while i < bytes.len() && is_seg_byte(bytes[i]) {
                    i += 1;
                }
                if i == name_start {
                    let what = if start == 0 && bytes.get(i) == Some(&b'[') {
                        "a path starts with a field name, not \"[]\"".to_owned()
                    } else {
                        format!(
                            "expected a field name (letters, digits, '_' or '-'), found {}",
                            describe_at(s, i)
                        )
                    };
                    return Err(err(i, what));
                }
                segs.push(Seg::Key(s[start..i].to_owned()));
                want_seg = false;
                continue;
            }
            match bytes[i] {
                b'.' => {
                    i += 1;
                    want_seg = true;
                    if i == bytes.len() {
                        return Err(err(
                            i,
                            "expected a field name after \".\", found the end of the path"
                                .to_owned(),
                        ));
                    }
                }
                b'[' => {
                    if bytes.get(i + 1) != Some(&b']') {
                        return Err(err(
                            i + 1,
                            format!(
                                "expected \"]\" after \"[\" (\"[]\" matches any index; \
                                 indices cannot be named), found {}",
                                describe_at(s, i + 1)
                            ),
                        ));
                    }
                    segs.push(Seg::Any);
                    i += 2;
                }
                _ => {
                    return Err(err(
                        i,
                        format!("expected \".\" or \"[]\", found {}", describe_at(s, i)),
                    ));
                }
            }
        }
        Ok(SensitivePath { segs })
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
        write_segs(f, &self.segs)
    }
}

/// Writes segments in canonical form (`cards[].cvc`).
pub(crate) fn write_segs(f: &mut impl fmt::Write, segs: &[Seg]) -> fmt::Result {
    for (n, seg) in segs.iter().enumerate() {
        match seg {
            Seg::Key(k) => {
                if n > 0 {
                    f.write_char('.')?;
                }
                f.write_str(k)?;
            }
            Seg::Any => f.write_str("[]")?,
        }
    }
    Ok(())
}

/// Canonical text of a slice of segments.
pub(crate) fn segs_to_string(segs: &[Seg]) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write_segs(&mut s, segs);
    s
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

impl Seg {
    /// Does this segment match `step`?
    ///
    /// A `Key` matches an object member of that name and, when its text is a number, the
    /// array element of that index. `Any` matches any array element and any member of an
    /// object (a map's values; the path was checked against the schema at
    /// registration). A location string step matches a `Key` of the same text, and
    /// `Any` always; the step `?` (an unknown step in a `serde_path_to_error` path)
    /// matches every segment.
    pub(crate) fn matches(&self, step: Step<'_>) -> bool {
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

    #[test]
    fn good_paths_parse_and_print_canonically() {
        let table: &[(&str, Vec<Seg>)] = &[
            ("a", vec![key("a")]),
            ("a.b", vec![key("a"), key("b")]),
            ("cards[].cvc", vec![key("cards"), Seg::Any, key("cvc")]),
            ("a[][]", vec![key("a"), Seg::Any, Seg::Any]),
            (
                "a[].b[].c",
                vec![key("a"), Seg::Any, key("b"), Seg::Any, key("c")],
            ),
            ("card-number_2", vec![key("card-number_2")]),
            ("0", vec![key("0")]),
            ("a.0.b", vec![key("a"), key("0"), key("b")]),
            ("r#type", vec![key("r#type")]),
            ("x.r#type[]", vec![key("x"), key("r#type"), Seg::Any]),
            ("CVC", vec![key("CVC")]),
        ];
        for (text, segs) in table {
            let p = SensitivePath::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(p.segs(), &segs[..], "{text}");
            assert_eq!(p.to_string(), *text);
            assert_eq!(SensitivePath::parse(&p.to_string()), Ok(p));
        }
    }

    #[test]
    fn bad_paths_report_position_and_reason() {
        let table: &[(&str, usize, &str)] = &[
            ("", 0, "cannot be empty"),
            ("[]", 0, "starts with a field name"),
            ("[].a", 0, "starts with a field name"),
            (".a", 0, "expected a field name"),
            ("a.", 2, "after \".\""),
            ("a..b", 2, "expected a field name"),
            ("a[", 2, "expected \"]\" after \"[\""),
            ("cards[.cvc", 6, "expected \"]\" after \"[\""),
            ("a[0]", 2, "expected \"]\" after \"[\""),
            ("a[]b", 3, "expected \".\" or \"[]\""),
            ("a b", 1, "expected \".\" or \"[]\", found whitespace"),
            (" a", 0, "expected a field name"),
            ("a ", 1, "found whitespace"),
            ("a]", 1, "expected \".\" or \"[]\""),
            ("a.$id", 2, "expected a field name"),
            ("a.é", 2, "expected a field name"),
            ("r#", 2, "expected a field name"),
            ("a.r#", 4, "expected a field name"),
            ("a[]. b", 4, "found whitespace"),
        ];
        for (text, position, needle) in table {
            let e = SensitivePath::parse(text).expect_err(text);
            assert_eq!(e.position, *position, "{text}: {e}");
            assert_eq!(e.path, *text);
            assert!(e.message.contains(needle), "{text}: {e}");
            assert!(e.to_string().starts_with("sensitive path "), "{e}");
        }
    }

    #[test]
    fn error_display_names_path_position_and_reason() {
        let e = SensitivePath::parse("cards[.cvc").expect_err("malformed");
        assert_eq!(
            e.to_string(),
            "sensitive path \"cards[.cvc\" is malformed at position 6: expected \"]\" after \
             \"[\" (\"[]\" matches any index; indices cannot be named), found \".\""
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
