//! Summary templates: literal text with `{field}` / `{a.b}` placeholders that name
//! input fields (`"Create challenge \"{title}\""`); `{{` and `}}` are literal braces.
//! A placeholder is one or more [name segments](crate::name) joined by `.`
//! (a numeric segment indexes an array: `{cards.0.holder}`); spaces around it are
//! ignored.

use std::fmt;

use crate::name::is_segment;

/// One piece of a parsed template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Literal text (braces unescaped).
    Lit(String),
    /// A placeholder: a dotted input path.
    Field(String),
}

/// Why a summary template does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateError {
    /// Byte offset of the problem (always a character boundary).
    pub position: usize,
    /// What is wrong, with the position.
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TemplateError {}

/// Parses a summary template into literal and placeholder parts (adjacent literal
/// text is one part; an empty template has none).
///
/// ```
/// use toolmark_syntax::template::{parse, Part};
/// assert_eq!(
///     parse("Pay {payee} {{now}}").unwrap(),
///     [Part::Lit("Pay ".into()), Part::Field("payee".into()), Part::Lit(" {now}".into())]
/// );
/// assert_eq!(parse("{a").unwrap_err().to_string(), "unclosed `{` at position 0");
/// ```
pub fn parse(s: &str) -> Result<Vec<Part>, TemplateError> {
    let err = |position: usize, message: String| TemplateError { position, message };
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' if chars.peek().map(|p| p.1) == Some('{') => {
                chars.next();
                lit.push('{');
            }
            '}' if chars.peek().map(|p| p.1) == Some('}') => {
                chars.next();
                lit.push('}');
            }
            '{' => {
                let mut field = String::new();
                let mut closed = false;
                for (_, c) in chars.by_ref() {
                    if c == '}' {
                        closed = true;
                        break;
                    }
                    field.push(c);
                }
                if !closed {
                    return Err(err(i, format!("unclosed `{{` at position {i}")));
                }
                let field = field.trim().to_owned();
                if field.is_empty() || field.split('.').any(|seg| !is_segment(seg)) {
                    return Err(err(
                        i,
                        format!(
                            "`{{{field}}}` at position {i} is not an input field (use \
                             `{{name}}` or `{{a.b}}`; `{{{{` for a literal brace)"
                        ),
                    ));
                }
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(&mut lit)));
                }
                parts.push(Part::Field(field));
            }
            '}' => {
                return Err(err(
                    i,
                    format!("unmatched `}}` at position {i} (use `}}}}`)"),
                ))
            }
            c => lit.push(c),
        }
    }
    if !lit.is_empty() {
        parts.push(Part::Lit(lit));
    }
    Ok(parts)
}

/// The placeholders of parsed `parts`, in order.
pub fn fields(parts: &[Part]) -> impl Iterator<Item = &str> {
    parts.iter().filter_map(|p| match p {
        Part::Field(f) => Some(f.as_str()),
        Part::Lit(_) => None,
    })
}

/// The template text of `parts` (literal braces escaped), which [`parse`] reads
/// back as the same parts.
pub fn to_string(parts: &[Part]) -> String {
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Lit(s) => {
                for c in s.chars() {
                    match c {
                        '{' => out.push_str("{{"),
                        '}' => out.push_str("}}"),
                        c => out.push(c),
                    }
                }
            }
            Part::Field(f) => {
                out.push('{');
                out.push_str(f);
                out.push('}');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn lit(s: &str) -> Part {
        Part::Lit(s.to_owned())
    }

    fn field(s: &str) -> Part {
        Part::Field(s.to_owned())
    }

    #[test]
    fn templates_split_into_literals_and_placeholders() {
        assert_eq!(
            parse("Create \"{title}\" for {owner.name}").unwrap(),
            [
                lit("Create \""),
                field("title"),
                lit("\" for "),
                field("owner.name")
            ]
        );
        assert_eq!(parse("{{literal}} {{}}").unwrap(), [lit("{literal} {}")]);
        assert_eq!(parse("{ a }").unwrap(), [field("a")]);
        assert_eq!(parse("{cards.0.cvc}").unwrap(), [field("cards.0.cvc")]);
        assert_eq!(parse("").unwrap(), []);
        assert_eq!(parse("día {a}").unwrap(), [lit("día "), field("a")]);
    }

    #[test]
    fn bad_templates_say_where_and_why() {
        let table: &[(&str, usize, &str)] = &[
            ("{a", 0, "unclosed `{` at position 0"),
            ("x {a b", 2, "unclosed"),
            ("a}", 1, "unmatched `}` at position 1 (use `}}`)"),
            ("{}", 0, "`{}` at position 0 is not an input field"),
            ("{a b}", 0, "not an input field"),
            ("{a..b}", 0, "not an input field"),
            ("é{.a}", 2, "`{.a}` at position 2 is not an input field"),
            ("{$id}", 0, "not an input field"),
        ];
        for (text, position, needle) in table {
            let e = parse(text).expect_err(text);
            assert_eq!(e.position, *position, "{text}: {e}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
        assert_eq!(
            parse("{a b}").unwrap_err().to_string(),
            "`{a b}` at position 0 is not an input field (use `{name}` or `{a.b}`; `{{` for \
             a literal brace)"
        );
    }

    #[test]
    fn fields_lists_the_placeholders_in_order() {
        let parts = parse("{b} and {a.c} {{d}}").unwrap();
        assert_eq!(fields(&parts).collect::<Vec<_>>(), ["b", "a.c"]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Any text: parsing never panics; an error's position is a character
        /// boundary; a template that parses prints back (braces escaped) as a text
        /// that parses to the same parts, with only valid placeholders.
        #[test]
        fn any_text_parses_back_or_fails_at_a_char_boundary(
            text in "[a-z {}.é\u{202e}\\-_0-9]{0,16}",
        ) {
            match parse(&text) {
                Ok(parts) => {
                    for f in fields(&parts) {
                        prop_assert!(f.split('.').all(is_segment), "{f}");
                    }
                    prop_assert_eq!(parse(&to_string(&parts)), Ok(parts));
                }
                Err(e) => {
                    prop_assert!(e.position < text.len());
                    prop_assert!(text.is_char_boundary(e.position));
                }
            }
        }
    }
}
