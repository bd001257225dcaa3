//! Keeping secrets out of messages: [`scrub`] for a tool's error and panic messages,
//! [`withhold_value`] for serde's messages about a value at a sensitive location.

use super::REDACTED;

/// What replaces a quoted value in a rewritten serde message.
const WITHHELD: &str = "(value withheld)";

/// Replaces every occurrence of every secret in `message` with `"[redacted]"`.
///
/// Occurrences are found in the original message (overlapping ones too) and each run of
/// overlapping or adjacent ones becomes one placeholder, so no secret survives in part
/// because a longer one was replaced first. Empty secrets are ignored.
pub(crate) fn scrub(message: &str, secrets: &[String]) -> String {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for secret in secrets {
        if secret.is_empty() {
            continue;
        }
        let mut from = 0;
        while let Some(pos) = message
            .get(from..)
            .and_then(|rest| rest.find(secret.as_str()))
        {
            let start = from + pos;
            ranges.push((start, start + secret.len()));
            let first = message[start..].chars().next().map_or(1, char::len_utf8);
            from = start + first;
        }
    }
    if ranges.is_empty() {
        return message.to_owned();
    }
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    let mut out = String::with_capacity(message.len());
    let mut copied = 0;
    for (start, end) in merged {
        out.push_str(&message[copied..start]);
        out.push_str(REDACTED);
        copied = end;
    }
    out.push_str(&message[copied..]);
    out
}

/// Kinds of serde's `Unexpected` that quote their value in backticks.
const BACKTICK_KINDS: [&str; 4] = ["boolean", "integer", "floating point", "character"];

/// Kinds of serde's (and serde_json's) `Unexpected` that carry no value.
const PLAIN_KINDS: [&str; 12] = [
    "null",
    "unit value",
    "Option value",
    "newtype struct",
    "sequence",
    "map",
    "enum",
    "unit variant",
    "newtype variant",
    "tuple variant",
    "struct variant",
    "byte array",
];

/// Rewrites a serde error message about a value at a sensitive location so that it
/// cannot quote the value, keeping its shape and its "expected …" part.
///
/// `invalid type: string "4242", expected u32` becomes
/// `invalid type: string (value withheld), expected u32`; likewise for
/// `invalid value: …`, `unknown variant `…`, expected …` and `unknown field`,
/// `missing field` and `duplicate field` messages. Any other message has every `"…"`
/// and `` `…` `` span withheld. A custom message that writes the value unquoted cannot
/// be recognized here: scrub it with the call's [`secrets`](super::Matcher::secrets)
/// as well.
pub(crate) fn withhold_value(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            return format!("{prefix}{}", withhold_unexpected(rest));
        }
    }
    for label in ["unknown variant ", "unknown field "] {
        if let Some(rest) = message
            .strip_prefix(label)
            .and_then(|r| r.strip_prefix('`'))
        {
            // The value is unescaped: it ends at the last delimiter serde writes after it.
            let cut = ["`, expected ", "`, there are no "]
                .iter()
                .filter_map(|d| rest.rfind(d))
                .max();
            return match cut {
                Some(pos) => format!("{label}{WITHHELD}{}", &rest[pos + 1..]),
                None => format!("{label}{WITHHELD}"),
            };
        }
    }
    for label in ["missing field ", "duplicate field "] {
        if let Some(rest) = message
            .strip_prefix(label)
            .and_then(|r| r.strip_prefix('`'))
        {
            let tail = rest.rfind('`').map_or("", |p| &rest[p + 1..]);
            return format!("{label}{WITHHELD}{}", withhold_quoted(tail));
        }
    }
    if let Some(types) = expected_types(message) {
        return format!("expected {types} {WITHHELD}");
    }
    withhold_quoted(message)
}

/// The expected types of a JSON Schema validator's masked type error (`value is not
/// of type "string"`, `value is not of types "boolean", "object"`), as
/// `string` or `boolean or object`. The quoted names come from the schema, never from
/// the value; anything but plain type names is not recognized.
fn expected_types(message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("value is not of types ")
        .or_else(|| message.strip_prefix("value is not of type "))?;
    let names = rest
        .split(", ")
        .map(|t| {
            t.strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_lowercase()))
        })
        .collect::<Option<Vec<&str>>>()?;
    Some(names.join(" or "))
}

/// Rewrites `rest`, serde's `Unexpected` followed by `, expected …`.
///
/// Only the kind of the unexpected value is kept, and the text from the last
/// `, expected` on: serde writes the expectation (the type's text) after the value, so
/// that part never holds the value, even when the value itself contains `, expected`.
fn withhold_unexpected(rest: &str) -> String {
    let expected = rest.rfind(", expected").map_or("", |p| &rest[p..]);
    for kind in PLAIN_KINDS {
        if rest
            .strip_prefix(kind)
            .is_some_and(|tail| tail.starts_with(", expected"))
        {
            return format!("{kind}{expected}");
        }
    }
    let valued = BACKTICK_KINDS
        .iter()
        .find(|kind| {
            rest.strip_prefix(**kind)
                .is_some_and(|tail| tail.starts_with(" `"))
        })
        .copied()
        .or_else(|| rest.starts_with("string \"").then_some("string"));
    match valued {
        Some(kind) => format!("{kind} {WITHHELD}{expected}"),
        // `Unexpected::Other`: free text.
        None => format!("{WITHHELD}{expected}"),
    }
}

/// The byte index of the quote that closes a `Debug`-escaped string whose opening quote
/// was just before `s`.
fn debug_string_end(s: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(i),
            _ => {}
        }
    }
    None
}

/// Replaces every `"…"` (with backslash escapes) and `` `…` `` span of `message` with
/// the placeholder; an unterminated span runs to the end.
fn withhold_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(open) = rest.find(['"', '`']) {
        out.push_str(&rest[..open]);
        out.push_str(WITHHELD);
        let after = &rest[open + 1..];
        let close = if rest[open..].starts_with('"') {
            debug_string_end(after)
        } else {
            after.find('`')
        };
        match close {
            Some(c) => rest = &after[c + 1..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use serde::de::{Error as _, Unexpected};
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_schema_type_error_keeps_the_expected_types() {
        assert_eq!(
            withhold_value("value is not of type \"string\""),
            "expected string (value withheld)"
        );
        assert_eq!(
            withhold_value("value is not of types \"boolean\", \"object\""),
            "expected boolean or object (value withheld)"
        );
        // Anything unusual falls back to withholding every quoted span.
        assert_eq!(
            withhold_value("value is not of type \"S3CRET x\""),
            "value is not of type (value withheld)"
        );
    }

    fn de_err(f: impl FnOnce() -> serde_json::Error) -> String {
        f().to_string()
    }

    #[test]
    fn scrub_replaces_every_occurrence() {
        let secrets = vec!["4242".to_owned(), "123".to_owned()];
        assert_eq!(
            scrub("card 4242 cvc 123 again 4242", &secrets),
            "card [redacted] cvc [redacted] again [redacted]"
        );
        assert_eq!(scrub("nothing here", &secrets), "nothing here");
        assert_eq!(scrub("", &secrets), "");
        assert_eq!(scrub("abc", &[String::new()]), "abc");
    }

    #[test]
    fn scrub_merges_overlapping_secrets() {
        let secrets = vec!["abc".to_owned(), "bcd".to_owned(), "red".to_owned()];
        assert_eq!(scrub("xabcdx", &secrets), "x[redacted]x");
        // A secret that is part of the placeholder does not mangle it.
        assert_eq!(scrub("a red car", &secrets), "a [redacted] car");
        assert_eq!(scrub("aaaa", &["aa".to_owned()]), "[redacted]");
        assert_eq!(scrub("é€é", &["€".to_owned()]), "é[redacted]é");
    }

    #[test]
    fn withholds_strings_from_invalid_type() {
        let m = de_err(|| serde_json::Error::invalid_type(Unexpected::Str("4242"), &"u32"));
        assert_eq!(m, "invalid type: string \"4242\", expected u32");
        assert_eq!(
            withhold_value(&m),
            "invalid type: string (value withheld), expected u32"
        );
        let real = serde_json::from_value::<u32>(json!("4242")).expect_err("type error");
        assert_eq!(
            withhold_value(&real.to_string()),
            "invalid type: string (value withheld), expected u32"
        );
    }

    #[test]
    fn withholds_backticked_values() {
        let cases = [
            (Unexpected::Signed(-5), "integer"),
            (Unexpected::Unsigned(5), "integer"),
            (Unexpected::Float(1.5), "floating point"),
            (Unexpected::Bool(true), "boolean"),
            (Unexpected::Char('`'), "character"),
            (Unexpected::Char('x'), "character"),
        ];
        for (unexp, kind) in cases {
            let m = de_err(|| serde_json::Error::invalid_value(unexp, &"a short pin"));
            assert_eq!(
                withhold_value(&m),
                format!("invalid value: {kind} (value withheld), expected a short pin"),
                "{m}"
            );
        }
    }

    #[test]
    fn keeps_messages_without_a_value() {
        for m in [
            "invalid type: map, expected a string",
            "invalid type: null, expected u32",
            "invalid type: sequence, expected struct Card",
            "invalid length 3, expected a tuple of size 2",
        ] {
            assert_eq!(withhold_value(m), m);
        }
    }

    #[test]
    fn withholds_unknown_variants_and_fields() {
        #[derive(Debug, Deserialize)]
        enum Kind {
            Visa,
            Amex,
        }
        let e = serde_json::from_value::<Kind>(json!("Secret`, expected x")).expect_err("variant");
        assert_eq!(
            withhold_value(&e.to_string()),
            "unknown variant (value withheld), expected `Visa` or `Amex`"
        );
        let m = de_err(|| serde_json::Error::unknown_variant("s3cret", &[]));
        assert_eq!(
            withhold_value(&m),
            "unknown variant (value withheld), there are no variants"
        );
        let m = de_err(|| serde_json::Error::unknown_field("tok", &["a", "b"]));
        assert_eq!(
            withhold_value(&m),
            "unknown field (value withheld), expected `a` or `b`"
        );
        let m = de_err(|| serde_json::Error::missing_field("cvc"));
        assert_eq!(withhold_value(&m), "missing field (value withheld)");
        let m = de_err(|| serde_json::Error::duplicate_field("cvc"));
        assert_eq!(withhold_value(&m), "duplicate field (value withheld)");
    }

    #[test]
    fn a_value_that_looks_like_the_expected_part_is_still_withheld() {
        let v = "x\", expected SECRET `y` \"z";
        let m = de_err(|| serde_json::Error::invalid_type(Unexpected::Str(v), &"u32"));
        let w = withhold_value(&m);
        assert_eq!(w, "invalid type: string (value withheld), expected u32");
        let m = de_err(|| {
            serde_json::Error::invalid_value(Unexpected::Other("SECRET, expected SECRET"), &"u8")
        });
        assert_eq!(
            withhold_value(&m),
            "invalid value: (value withheld), expected u8"
        );
        for other in [
            "map, expected SECRET",
            "integer `5`, expected SECRET",
            "string \"x\", expected SECRET",
        ] {
            let m = de_err(|| serde_json::Error::invalid_value(Unexpected::Other(other), &"u8"));
            let w = withhold_value(&m);
            assert!(!w.contains("SECRET"), "{m} -> {w}");
            assert!(w.ends_with(", expected u8"), "{w}");
        }
    }

    #[test]
    fn other_messages_have_quoted_spans_withheld() {
        assert_eq!(
            withhold_value("cards[0].cvc: invalid type: string \"123\", expected u16"),
            "cards[0].cvc: invalid type: string (value withheld), expected u16"
        );
        assert_eq!(
            withhold_value("bad `pin` and \"x\\\"y\" here"),
            "bad (value withheld) and (value withheld) here"
        );
        assert_eq!(
            withhold_value("open \"never closed"),
            "open (value withheld)"
        );
        assert_eq!(withhold_value("no quotes at all"), "no quotes at all");
    }
}
