//! Confirmation summary templates: `"Create challenge \"{title}\""`, and the
//! rules that keep a summary one short line whatever an agent puts in it.

use serde_json::Value;
use toolmark_syntax::template::Part;

use crate::sensitive::{Matcher, REDACTED};

/// A parsed summary template: literal text and `{field}` / `{a.b}` placeholders;
/// `{{` and `}}` are literal braces. The grammar is `toolmark_syntax::template`,
/// the one parser the `#[tool]` macro checks templates with at compile time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Template {
    parts: Vec<Piece>,
    /// Every literal part is printable ASCII (checked once, here): a summary made
    /// of them and of plain values needs no second pass over its characters.
    plain_lits: bool,
}

/// A part of a parsed template, as it is rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Lit(String),
    /// A placeholder; `dotted`: its path has more than one segment (known once,
    /// here, not searched for at every render).
    Field {
        path: String,
        dotted: bool,
    },
}

impl Template {
    pub(crate) fn parse(s: &str) -> Result<Template, String> {
        toolmark_syntax::template::parse(s)
            .map(Template::of)
            .map_err(|e| e.to_string())
    }

    fn of(parts: Vec<Part>) -> Template {
        let plain_lits = parts.iter().all(|p| match p {
            Part::Lit(s) => is_plain(s, usize::MAX),
            Part::Field(_) => true,
        });
        let parts = parts
            .into_iter()
            .map(|p| match p {
                Part::Lit(s) => Piece::Lit(s),
                Part::Field(path) => Piece::Field {
                    dotted: path.contains('.'),
                    path,
                },
            })
            .collect();
        Template { parts, plain_lits }
    }

    /// The same template with every placeholder path rewritten by `map` (the
    /// macro's Rust field names become the schema's JSON names).
    pub(crate) fn map_fields(
        &self,
        mut map: impl FnMut(&str) -> Result<String, String>,
    ) -> Result<Template, String> {
        let parts = self
            .parts
            .iter()
            .map(|p| match p {
                Piece::Lit(s) => Ok(Part::Lit(s.clone())),
                Piece::Field { path, .. } => map(path).map(Part::Field),
            })
            .collect::<Result<_, _>>()?;
        Ok(Template::of(parts))
    }

    /// Fill the template from `input`: a sensitive value becomes `"[redacted]"`;
    /// strings are inserted as they are, other values as compact JSON, missing ones
    /// as nothing. Each placeholder shows at most [`PLACEHOLDER_MAX`] characters and
    /// the summary at most [`SUMMARY_MAX`] (a cut ends in `…`); control and bidi
    /// characters become spaces (see [`one_line`]).
    pub(crate) fn render(&self, input: &Value, matcher: &Matcher) -> String {
        let mut out = String::with_capacity(64);
        // Whether every piece pushed so far was printable ASCII as it was.
        let mut plain = self.plain_lits;
        for part in &self.parts {
            match part {
                Piece::Lit(s) => out.push_str(s),
                Piece::Field { path, dotted } => {
                    // A one-segment path (the common case) is looked up as it is,
                    // without splitting it.
                    let value = if *dotted {
                        path.split('.').try_fold(input, |v, seg| field(v, seg))
                    } else {
                        field(input, path)
                    };
                    match value {
                        None | Some(Value::Null) => {}
                        Some(_) if matcher.matches(path) => out.push_str(REDACTED),
                        Some(Value::String(s)) => {
                            plain &= push_capped(&mut out, s, PLACEHOLDER_MAX)
                        }
                        Some(v) => {
                            let shown = matcher.redact_at(path, v);
                            plain &= match shown {
                                Value::String(s) => push_capped(&mut out, &s, PLACEHOLDER_MAX),
                                other => push_capped(&mut out, &other.to_string(), PLACEHOLDER_MAX),
                            };
                        }
                    }
                }
            }
        }
        // Made of printable ASCII only, the summary is one line as it is: only its
        // length is left to check (a character is a byte).
        if (plain && out.len() <= SUMMARY_MAX) || is_plain(&out, SUMMARY_MAX) {
            out
        } else {
            one_line(&out)
        }
    }
}

/// One step of a placeholder path: a key of an object, or an index of an array.
#[inline]
fn field<'v>(value: &'v Value, seg: &str) -> Option<&'v Value> {
    match value {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    }
}

/// The most characters one placeholder shows in a summary.
pub(crate) const PLACEHOLDER_MAX: usize = 80;
/// The most characters a summary has.
pub(crate) const SUMMARY_MAX: usize = 200;

/// `s` as one short line an approver can trust: control characters (newlines, tabs,
/// escapes) and Unicode bidi controls (which reorder what is displayed) become
/// spaces, and a text over [`SUMMARY_MAX`] characters is cut, ending in `…`. Used
/// for every summary an approver sees: templates and `ctx.confirm`'s own.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(4 * SUMMARY_MAX));
    push_capped(&mut out, s, SUMMARY_MAX);
    out
}

/// Printable ASCII of at most `max` bytes: shown exactly as it is (the common case,
/// copied in one go).
fn is_plain(s: &str, max: usize) -> bool {
    s.len() <= max && s.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// Push `s` sanitized and cut to at most `max` characters (the last one `…` when
/// cut), never splitting a character; whether `s` was pushed as it was (printable
/// ASCII within `max`).
fn push_capped(out: &mut String, s: &str, max: usize) -> bool {
    if is_plain(s, max) {
        out.push_str(s);
        return true;
    }
    let cut = s.chars().nth(max).is_some();
    let keep = if cut { max.saturating_sub(1) } else { max };
    out.extend(
        s.chars()
            .take(keep)
            .map(|c| if is_unsafe(c) { ' ' } else { c }),
    );
    if cut {
        out.push('…');
    }
    false
}

/// Characters that make one line look like several, or reorder what is shown.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn render(template: &str, input: Value) -> String {
        Template::parse(template)
            .unwrap()
            .render(&input, &Matcher::none())
    }

    #[test]
    fn a_placeholder_shows_at_most_80_characters() {
        let out = render("Pay {who}", json!({"who": "a".repeat(100)}));
        assert_eq!(out, format!("Pay {}…", "a".repeat(79)));
        assert_eq!(out.chars().count(), 4 + 80);
    }

    #[test]
    fn a_summary_is_at_most_200_characters() {
        let out = render(
            "{a}{b}{c}",
            json!({"a": "x".repeat(80), "b": "y".repeat(80), "c": "z".repeat(80)}),
        );
        assert_eq!(out.chars().count(), 200);
        assert!(out.ends_with('…'));
    }

    #[test]
    fn control_and_bidi_characters_become_spaces() {
        let out = render(
            "Send {t}",
            json!({"t": "a\nAPPROVED BY ADMIN\r\tb\u{202e}c\u{2066}\u{1b}[31m"}),
        );
        assert_eq!(out, "Send a APPROVED BY ADMIN  b c  [31m");
    }

    #[test]
    fn cuts_never_split_a_character_and_count_characters_not_bytes() {
        let out = render("{t}", json!({"t": "é".repeat(100)}));
        assert_eq!(out, format!("{}…", "é".repeat(79)));
    }

    #[test]
    fn a_short_summary_is_kept_exactly() {
        assert_eq!(
            render(
                "Create challenge \"{title}\" ({days} days)",
                json!({"title": "Robotics — día 1", "days": 30})
            ),
            "Create challenge \"Robotics — día 1\" (30 days)"
        );
    }

    #[test]
    fn a_placeholder_walks_objects_and_arrays() {
        let input = json!({
            "title": "Robotics",
            "owner": {"name": "Ada"},
            "cards": [{"holder": "Bo"}, {"holder": "Cy"}],
            "7": "seven"
        });
        assert_eq!(
            render("{title} {owner.name} {cards.1.holder} {7}", input.clone()),
            "Robotics Ada Cy seven"
        );
        // A missing step, an index past the end or into a non-array shows nothing.
        assert_eq!(
            render("[{owner.age}][{cards.5.holder}][{title.0}][{nope}]", input),
            "[][][][]"
        );
    }

    #[test]
    fn a_templates_own_text_is_made_one_line_too() {
        // A literal that is not printable ASCII takes the full check, whatever the
        // values are.
        assert_eq!(render("Send\n{t}\u{202e}!", json!({"t": "x"})), "Send x !");
        assert_eq!(render("Pay {t} €", json!({"t": "x"})), "Pay x €");
        // Plain pieces, each within its own cap, can still add up to too many.
        let out = render(
            "{a} {b} {c}",
            json!({"a": "x".repeat(70), "b": "y".repeat(70), "c": 7}),
        );
        assert_eq!(out.chars().count(), 143);
        let out = render(
            "{a}{b}{c}",
            json!({"a": "x".repeat(70), "b": "y".repeat(70), "c": "z".repeat(70)}),
        );
        assert_eq!(out.chars().count(), SUMMARY_MAX);
        assert!(out.ends_with('…'));
    }

    #[test]
    fn delete_is_a_control_character_too() {
        assert_eq!(render("Send {t}", json!({"t": "a\u{7f}b"})), "Send a b");
        assert_eq!(one_line("x\u{7f}"), "x ");
    }

    #[test]
    fn one_line_applies_to_any_text() {
        assert_eq!(one_line("a\nb"), "a b");
        assert_eq!(one_line(&"w".repeat(300)).chars().count(), SUMMARY_MAX);
    }
}
