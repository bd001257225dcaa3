//! Confirmation summary templates: `"Create challenge \"{title}\""`.

use serde_json::Value;

use crate::sensitive::{Matcher, REDACTED};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Lit(String),
    /// A dotted input path.
    Field(String),
}

/// A parsed summary template: literal text and `{field}` / `{a.b}` placeholders;
/// `{{` and `}}` are literal braces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Template {
    parts: Vec<Part>,
}

impl Template {
    pub(crate) fn parse(s: &str) -> Result<Template, String> {
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
                        return Err(format!("unclosed `{{` at position {i}"));
                    }
                    let field = field.trim().to_owned();
                    if field.is_empty()
                        || field
                            .split('.')
                            .any(|seg| !crate::scope::valid_segment(seg))
                    {
                        return Err(format!(
                            "`{{{field}}}` at position {i} is not an input field (use `{{name}}` or `{{a.b}}`; `{{{{` for a literal brace)"
                        ));
                    }
                    if !lit.is_empty() {
                        parts.push(Part::Lit(std::mem::take(&mut lit)));
                    }
                    parts.push(Part::Field(field));
                }
                '}' => return Err(format!("unmatched `}}` at position {i} (use `}}}}`)")),
                c => lit.push(c),
            }
        }
        if !lit.is_empty() {
            parts.push(Part::Lit(lit));
        }
        Ok(Template { parts })
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
                Part::Lit(s) => Ok(Part::Lit(s.clone())),
                Part::Field(f) => map(f).map(Part::Field),
            })
            .collect::<Result<_, _>>()?;
        Ok(Template { parts })
    }

    /// Fill the template from `input`: a sensitive value becomes `"[redacted]"`;
    /// strings are inserted as they are, other values as compact JSON, missing ones
    /// as nothing.
    pub(crate) fn render(&self, input: &Value, matcher: &Matcher) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Lit(s) => out.push_str(s),
                Part::Field(path) => {
                    let mut value = Some(input);
                    for seg in path.split('.') {
                        value = value.and_then(|v| match v {
                            Value::Object(m) => m.get(seg),
                            Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
                            _ => None,
                        });
                    }
                    match value {
                        None | Some(Value::Null) => {}
                        Some(_) if matcher.matches(path) => out.push_str(REDACTED),
                        Some(Value::String(s)) => out.push_str(s),
                        Some(v) => {
                            let shown = matcher.redact_at(path, v);
                            match shown {
                                Value::String(s) => out.push_str(&s),
                                other => out.push_str(&other.to_string()),
                            }
                        }
                    }
                }
            }
        }
        out
    }
}
