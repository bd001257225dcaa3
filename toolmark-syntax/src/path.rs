//! Sensitive paths: `seg(.seg|[])*`.
//!
//! - a `seg` is one or more of `[A-Za-z0-9_-]`, optionally preceded by `r#` (a Rust
//!   raw identifier such as `r#type`). A JSON property whose name has other
//!   characters (`$id`, `first name`, `a.b`) cannot be named by a sensitive path;
//! - `[]` steps into every element of an array (`cards[].cvc`, `matrix[][]`) and into
//!   every value of a map (`wallet[].cvc` on a `HashMap<String, Card>`);
//! - a path starts with a `seg`: `[]` alone (a whole top-level array) is not a path,
//!   because a tool's input is always an object. Indices (`a[0]`), empty segments
//!   (`a..b`, `.a`, `a.`), whitespace and anything after `[]` other than `.` or `[]`
//!   are errors.
//!
//! A path written after [`JSON_PREFIX`] (`json:card.CVC`) names JSON properties
//! (explicit serde renames, enum variants) instead of Rust fields; the grammar after
//! the prefix is the same.
//!
//! The text form is canonical: a path that parses prints back as the same text
//! ([`to_string`]).

use std::fmt;

use crate::name::is_segment_byte;

/// The prefix of a path written with JSON property names: `json:card.CVC`.
pub const JSON_PREFIX: &str = "json:";

/// Splits a path as written into its grammar text and whether it names JSON
/// properties (`json:` prefix) rather than Rust fields.
///
/// ```
/// use toolmark_syntax::path::split_json;
/// assert_eq!(split_json("json:card.CVC"), ("card.CVC", true));
/// assert_eq!(split_json("card.cvc"), ("card.cvc", false));
/// ```
pub fn split_json(text: &str) -> (&str, bool) {
    match text.strip_prefix(JSON_PREFIX) {
        Some(rest) => (rest, true),
        None => (text, false),
    }
}

/// One segment of a sensitive path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Seg {
    /// A field or property name (`cvc`; `r#type` keeps its `r#` as written).
    Key(String),
    /// `[]`: every element of a sequence, every value of a map.
    Any,
}

impl Seg {
    /// The segment naming `name`.
    pub fn key(name: impl Into<String>) -> Seg {
        Seg::Key(name.into())
    }
}

/// Why a sensitive path does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathError {
    /// The text that was parsed.
    pub path: String,
    /// Byte offset of the problem in `path` (always a character boundary).
    pub position: usize,
    /// What is wrong there.
    pub message: String,
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

/// Describes the character at byte `pos` of `s` for an error message.
fn describe_at(s: &str, pos: usize) -> String {
    match s.get(pos..).and_then(|rest| rest.chars().next()) {
        None => "the end of the path".to_owned(),
        Some(c) if c.is_whitespace() => format!("whitespace ({c:?})"),
        Some(c) => format!("{:?}", c.to_string()),
    }
}

/// Parses a sensitive path (see the [module docs](self) for the grammar).
///
/// ```
/// use toolmark_syntax::path::{parse, Seg};
/// assert_eq!(parse("a[].b").unwrap(), [Seg::key("a"), Seg::Any, Seg::key("b")]);
/// let e = parse("cards[0].cvc").unwrap_err();
/// assert_eq!(e.position, 6);
/// ```
pub fn parse(s: &str) -> Result<Vec<Seg>, PathError> {
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
            while i < bytes.len() && is_segment_byte(bytes[i]) {
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
                        "expected a field name after \".\", found the end of the path".to_owned(),
                    ));
                }
            }
            b'[' => {
                if bytes.get(i + 1) != Some(&b']') {
                    return Err(err(
                        i + 1,
                        format!(
                            "expected \"]\" after \"[\" (\"[]\" matches any index; indices \
                             cannot be named), found {}",
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
    Ok(segs)
}

/// Writes segments in canonical form (`cards[].cvc`).
pub fn write_segs(f: &mut impl fmt::Write, segs: &[Seg]) -> fmt::Result {
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

/// The canonical text of `segs`, which [`parse`] reads back.
pub fn to_string(segs: &[Seg]) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write_segs(&mut s, segs);
    s
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn key(k: &str) -> Seg {
        Seg::key(k)
    }

    /// Every good path, its segments, and its canonical text (the same text).
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
            let parsed = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(&parsed, segs, "{text}");
            assert_eq!(to_string(&parsed), *text);
        }
    }

    /// Every bad path, where it goes wrong and why.
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
            let e = parse(text).expect_err(text);
            assert_eq!(e.position, *position, "{text}: {e}");
            assert_eq!(e.path, *text);
            assert!(e.message.contains(needle), "{text}: {e}");
            assert!(e.to_string().starts_with("sensitive path "), "{e}");
        }
    }

    #[test]
    fn error_display_names_path_position_and_reason() {
        let e = parse("cards[.cvc").expect_err("malformed");
        assert_eq!(
            e.to_string(),
            "sensitive path \"cards[.cvc\" is malformed at position 6: expected \"]\" after \
             \"[\" (\"[]\" matches any index; indices cannot be named), found \".\""
        );
    }

    #[test]
    fn the_json_prefix_is_split_off() {
        assert_eq!(split_json("json:a.B"), ("a.B", true));
        assert_eq!(split_json("json:"), ("", true));
        assert_eq!(split_json("jsonx:a"), ("jsonx:a", false));
        assert_eq!(split_json("a"), ("a", false));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Paths print canonically and parse back to the same segments.
        #[test]
        fn paths_round_trip(
            first in "(r#)?[A-Za-z0-9_-]{1,4}",
            rest in prop::collection::vec(prop_oneof![
                "(r#)?[A-Za-z0-9_-]{1,4}".prop_map(Seg::Key),
                Just(Seg::Any),
            ], 0..=5),
        ) {
            let mut segs = vec![Seg::Key(first)];
            segs.extend(rest);
            let text = to_string(&segs);
            prop_assert_eq!(parse(&text), Ok(segs));
        }

        /// Any text: parsing never panics; a path that parses prints back as the same
        /// text; an error's position is a character boundary within the text.
        #[test]
        fn any_text_parses_canonically_or_fails_at_a_char_boundary(
            text in "[a-zA-Z0-9_\\-.\\[\\]# $é\u{202e}]{0,12}",
        ) {
            match parse(&text) {
                Ok(segs) => prop_assert_eq!(to_string(&segs), text),
                Err(e) => {
                    prop_assert!(e.position <= text.len());
                    prop_assert!(text.is_char_boundary(e.position));
                    prop_assert_eq!(&e.path, &text);
                }
            }
        }
    }
}
