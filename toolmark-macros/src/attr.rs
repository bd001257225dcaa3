//! Stage 1, parsing: the keys of `#[tool(...)]` and the parameters of the tool fn.
//!
//! Parsing only reads the shape of what was written (which key, which value, which
//! `#[arg]`); whether the values are acceptable is [`valid`](crate::valid)'s job. Every
//! problem is pushed to an [`Errors`] and parsing goes on, so one attribute reports all
//! of its mistakes at once.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprArray, FnArg, Ident, ItemFn, Lit, LitStr, Meta, Pat, Token, Type};

use crate::valid::{closest, Errors};

/// The keys `#[tool(...)]` accepts, for "did you mean" suggestions.
pub(crate) const KEYS: &[&str] = &[
    "name",
    "scope",
    "read_only",
    "consequential",
    "destructive",
    "sensitive",
    "callers",
    "summary",
    "description",
    "title",
    "timeout",
    "open_world",
    "closed_world",
    "idempotent",
];

/// The keys `#[arg(...)]` accepts.
const ARG_KEYS: &[&str] = &["description"];

/// A tool's effect, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EffectKey {
    /// `read_only`.
    ReadOnly,
    /// `consequential`.
    Consequential,
    /// `destructive`.
    Destructive,
}

/// The parsed `#[tool(...)]` attribute: each key as written, with its span.
#[derive(Default)]
pub(crate) struct Attrs {
    /// `name = "…"`.
    pub(crate) name: Option<LitStr>,
    /// `scope = "a.b"`.
    pub(crate) scope: Option<LitStr>,
    /// `read_only`, `consequential` or `destructive`, with the key's ident.
    pub(crate) effect: Option<(EffectKey, Ident)>,
    /// Every `sensitive = "…"` and every element of `sensitive = [..]`.
    pub(crate) sensitive: Vec<LitStr>,
    /// `callers = [..]`.
    pub(crate) callers: Option<Callers>,
    /// `summary = "…"`.
    pub(crate) summary: Option<LitStr>,
    /// `description = "…"`.
    pub(crate) description: Option<LitStr>,
    /// `title = "…"`.
    pub(crate) title: Option<LitStr>,
    /// `timeout = "30s"`.
    pub(crate) timeout: Option<LitStr>,
    /// `open_world` (`true`) or `closed_world` (`false`), with the key's ident.
    pub(crate) world: Option<(bool, Ident)>,
    /// `idempotent`.
    pub(crate) idempotent: Option<Ident>,
}

/// `callers = [inapp, mcp]` as written.
pub(crate) struct Callers {
    /// The whole `[..]`, for an empty list.
    pub(crate) list: ExprArray,
    /// The names, in order.
    pub(crate) names: Vec<Ident>,
}

/// `#[arg]` or `#[arg(description = "…")]` on a parameter.
pub(crate) struct ArgAttr {
    /// The attribute, for errors.
    pub(crate) span: Span,
    /// `description = "…"`.
    pub(crate) description: Option<LitStr>,
}

/// One parameter of the tool fn.
pub(crate) enum Param {
    /// A `self` receiver (an error, reported by `valid`).
    Receiver(Span),
    /// `pat: Type`.
    Typed {
        /// The pattern.
        pat: Box<Pat>,
        /// The type.
        ty: Box<Type>,
        /// Its `#[arg]`, if marked.
        arg: Option<ArgAttr>,
    },
}

/// What parsing found: the attribute, the parameters, and every problem so far.
pub(crate) struct Parsed {
    /// The attribute's keys.
    pub(crate) attrs: Attrs,
    /// The fn's parameters, in order.
    pub(crate) params: Vec<Param>,
    /// Problems found while parsing.
    pub(crate) errors: Errors,
}

/// Parses the attribute tokens and the parameters of `func`, removing every
/// `#[arg]` from `func` (they are the macro's, not the compiler's).
pub(crate) fn parse(attr: TokenStream, func: &mut ItemFn) -> Parsed {
    let mut errors = Errors::default();
    let attrs = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr) {
        Ok(metas) => parse_metas(metas, &mut errors),
        Err(e) => {
            errors.push(e);
            Attrs::default()
        }
    };
    let params = func
        .sig
        .inputs
        .iter_mut()
        .map(|input| match input {
            FnArg::Receiver(r) => Param::Receiver(r.span()),
            FnArg::Typed(pt) => {
                let arg = take_arg_attr(&mut pt.attrs, &mut errors);
                Param::Typed {
                    pat: pt.pat.clone(),
                    ty: pt.ty.clone(),
                    arg,
                }
            }
        })
        .collect();
    Parsed {
        attrs,
        params,
        errors,
    }
}

/// Reads each `key`, `key = value` of the attribute.
fn parse_metas(metas: Punctuated<Meta, Token![,]>, errors: &mut Errors) -> Attrs {
    let mut attrs = Attrs::default();
    for meta in metas {
        let Some(key) = meta.path().get_ident().cloned() else {
            errors.error(meta.path(), unknown_key(&path_text(meta.path())));
            continue;
        };
        let k = key.to_string();
        let k = k.strip_prefix("r#").unwrap_or(&k);
        match k {
            "read_only" | "consequential" | "destructive" => {
                let effect = match k {
                    "read_only" => EffectKey::ReadOnly,
                    "consequential" => EffectKey::Consequential,
                    _ => EffectKey::Destructive,
                };
                if !matches!(meta, Meta::Path(_)) {
                    errors.error(&meta, format!("`{k}` takes no value: write `{k}` alone"));
                    continue;
                }
                match &attrs.effect {
                    Some((_, first)) if first == &key => errors.error(
                        &key,
                        format!("duplicate key `{k}`"),
                    ),
                    Some((_, first)) => errors.error(
                        &key,
                        format!(
                            "a tool has one effect, but both `{first}` and `{k}` are given; keep one"
                        ),
                    ),
                    None => attrs.effect = Some((effect, key)),
                }
            }
            "open_world" | "closed_world" | "idempotent" => {
                if !matches!(meta, Meta::Path(_)) {
                    let hint = match k {
                        "idempotent" => "leave it out for a tool that is not",
                        "open_world" => "write `closed_world` for the opposite",
                        _ => "write `open_world` for the opposite",
                    };
                    errors.error(
                        &meta,
                        format!("`{k}` takes no value: write `{k}` alone ({hint})"),
                    );
                    continue;
                }
                if k == "idempotent" {
                    if attrs.idempotent.is_some() {
                        errors.error(&key, "duplicate key `idempotent`");
                    } else {
                        attrs.idempotent = Some(key);
                    }
                    continue;
                }
                match &attrs.world {
                    Some((_, first)) if first == &key => {
                        errors.error(&key, format!("duplicate key `{k}`"));
                    }
                    Some((_, first)) => errors.error(
                        &key,
                        format!(
                            "a tool is either `open_world` (it reaches beyond the app) or \
                             `closed_world` (only the app's own data), but both `{first}` and \
                             `{k}` are given; keep one"
                        ),
                    ),
                    None => attrs.world = Some((k == "open_world", key)),
                }
            }
            "sensitive" => {
                let Some(value) = name_value(&meta, k, "\"cards[].cvc\"", errors) else {
                    continue;
                };
                match value {
                    Expr::Array(list) => {
                        for elem in &list.elems {
                            if let Some(lit) = lit_str(elem) {
                                attrs.sensitive.push(lit);
                            } else {
                                errors.error(
                                    elem,
                                    "a sensitive path is a string: `sensitive = [\"a\", \"b.c\"]`",
                                );
                            }
                        }
                    }
                    other => match lit_str(other) {
                        Some(lit) => attrs.sensitive.push(lit),
                        None => errors.error(
                            other,
                            "`sensitive` expects a string or a list of strings: \
                             `sensitive = \"cards[].cvc\"` or `sensitive = [\"a\", \"b\"]`",
                        ),
                    },
                }
            }
            "callers" => {
                let Some(value) = name_value(&meta, k, "[inapp, mcp]", errors) else {
                    continue;
                };
                let Expr::Array(list) = value else {
                    errors.error(
                        value,
                        "`callers` expects a list of caller names: `callers = [inapp, mcp]`",
                    );
                    continue;
                };
                let mut names = Vec::new();
                for elem in &list.elems {
                    match elem {
                        Expr::Path(p) if p.attrs.is_empty() && p.qself.is_none() => {
                            match p.path.get_ident() {
                                Some(id) => names.push(id.clone()),
                                None => errors.error(elem, caller_shape_error()),
                            }
                        }
                        _ => errors.error(elem, caller_shape_error()),
                    }
                }
                if attrs.callers.is_some() {
                    errors.error(&key, "duplicate key `callers`");
                } else {
                    attrs.callers = Some(Callers {
                        list: list.clone(),
                        names,
                    });
                }
            }
            "name" | "scope" | "summary" | "description" | "title" | "timeout" => {
                let example = match k {
                    "name" => "\"fill\"",
                    "scope" => "\"challenges.create\"",
                    "summary" => "\"Create {title}\"",
                    "timeout" => "\"30s\"",
                    _ => "\"…\"",
                };
                let Some(value) = name_value(&meta, k, example, errors) else {
                    continue;
                };
                let Some(lit) = lit_str(value) else {
                    errors.error(value, format!("`{k}` expects a string: `{k} = {example}`"));
                    continue;
                };
                let slot = match k {
                    "name" => &mut attrs.name,
                    "scope" => &mut attrs.scope,
                    "summary" => &mut attrs.summary,
                    "description" => &mut attrs.description,
                    "title" => &mut attrs.title,
                    _ => &mut attrs.timeout,
                };
                if slot.is_some() {
                    errors.error(&key, format!("duplicate key `{k}`"));
                } else {
                    *slot = Some(lit);
                }
            }
            other => errors.error(&key, unknown_key(other)),
        }
    }
    attrs
}

/// The value of `key = value`, or an error naming the expected form.
fn name_value<'m>(
    meta: &'m Meta,
    key: &str,
    example: &str,
    errors: &mut Errors,
) -> Option<&'m Expr> {
    match meta {
        Meta::NameValue(nv) => Some(&nv.value),
        Meta::Path(p) => {
            errors.error(p, format!("`{key}` needs a value: `{key} = {example}`"));
            None
        }
        Meta::List(l) => {
            errors.at(
                l.delimiter.span().join(),
                format!("write `{key} = {example}`, not `{key}(…)`"),
            );
            None
        }
    }
}

/// The string literal `expr` is, if it is one.
fn lit_str(expr: &Expr) -> Option<LitStr> {
    match expr {
        Expr::Lit(l) if l.attrs.is_empty() => match &l.lit {
            Lit::Str(s) => Some(s.clone()),
            _ => None,
        },
        Expr::Group(g) => lit_str(&g.expr),
        _ => None,
    }
}

fn caller_shape_error() -> &'static str {
    "a caller is one of the names human, inapp, webmcp, mcp, tour, test: `callers = [inapp, mcp]`"
}

/// `a::b` as text.
fn path_text(path: &syn::Path) -> String {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let lead = if path.leading_colon.is_some() {
        "::"
    } else {
        ""
    };
    format!("{lead}{}", segs.join("::"))
}

/// "unknown key `x`; did you mean `y`?"
fn unknown_key(key: &str) -> String {
    match closest(key, KEYS) {
        Some(near) => format!("unknown key `{key}`; did you mean `{near}`?"),
        None => format!("unknown key `{key}`; the keys are {}", KEYS.join(", ")),
    }
}

/// Removes every `#[arg]` / `#[arg(...)]` from `attrs` and parses the first one.
fn take_arg_attr(attrs: &mut Vec<syn::Attribute>, errors: &mut Errors) -> Option<ArgAttr> {
    let mut found: Option<ArgAttr> = None;
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in attrs.drain(..) {
        if !attr.path().is_ident("arg") {
            kept.push(attr);
            continue;
        }
        if found.is_some() {
            errors.error(&attr, "duplicate `#[arg]`; merge them into one");
            continue;
        }
        let mut parsed = ArgAttr {
            span: attr.span(),
            description: None,
        };
        match &attr.meta {
            Meta::Path(_) => {}
            Meta::NameValue(nv) => {
                errors.error(nv, "write `#[arg]` or `#[arg(description = \"…\")]`")
            }
            Meta::List(list) => {
                let res = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated);
                match res {
                    Ok(metas) => {
                        for meta in metas {
                            parse_arg_key(&meta, &mut parsed, errors);
                        }
                    }
                    Err(e) => errors.push(e),
                }
            }
        }
        found = Some(parsed);
    }
    *attrs = kept;
    found
}

/// One key of `#[arg(...)]`.
fn parse_arg_key(meta: &Meta, arg: &mut ArgAttr, errors: &mut Errors) {
    if !meta.path().is_ident("description") {
        let key = path_text(meta.path());
        let msg = match closest(&key, ARG_KEYS) {
            Some(near) => format!("unknown `#[arg]` key `{key}`; did you mean `{near}`?"),
            None => format!("unknown `#[arg]` key `{key}`; the only key is `description`"),
        };
        errors.error(meta.path(), msg);
        return;
    }
    let Some(value) = name_value(meta, "description", "\"…\"", errors) else {
        return;
    };
    match lit_str(value) {
        Some(_) if arg.description.is_some() => {
            errors.error(meta.path(), "duplicate key `description`");
        }
        Some(lit) => arg.description = Some(lit),
        None => errors.error(
            value,
            "`description` expects a string: `description = \"…\"`",
        ),
    }
}
