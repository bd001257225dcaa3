//! Stage 2, checking: turns what [`attr`](crate::attr) parsed into a [`Tool`] the
//! expansion can write, or into every error found, each spanned at the offending
//! token.
//!
//! Some checks cannot be done here because they need types: a sensitive path or a
//! summary placeholder naming a field of a user's input type, `[]` after a field
//! that is neither a sequence nor a map, an input type that is not `Deserialize + JsonSchema`, an
//! output that is not `Serialize`. For those, [`Tool`] carries what the expansion
//! needs to write type-checked code spanned at the user's tokens.

use proc_macro2::Span;
use quote::ToTokens;
use syn::{
    Expr, GenericArgument, GenericParam, Ident, ItemFn, LitStr, Member, Pat, PathArguments,
    ReturnType, Type,
};
use toolmark_syntax::path::Seg;

use crate::attr::{ArgAttr, EffectKey, Param, Parsed};

/// Every error found so far, combined into one (`syn::Error::combine`).
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Adds `error`.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// Adds an error spanned over `tokens`.
    pub(crate) fn error(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Adds an error at `span`.
    pub(crate) fn at(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    /// `Ok` when nothing was found, else every error.
    pub(crate) fn finish(self) -> Result<(), syn::Error> {
        self.0.map_or(Ok(()), Err)
    }
}

/// The checked tool: everything the expansion writes.
pub(crate) struct Tool {
    /// The tool name (the fn name unless `name = "…"`).
    pub(crate) name: String,
    /// The scope path, `""` for none.
    pub(crate) scope: String,
    /// The effect; `None` is `Write`.
    pub(crate) effect: Option<EffectKey>,
    /// The allowed callers (`Caller` variant names); empty means every caller.
    pub(crate) callers: Vec<&'static str>,
    /// The description.
    pub(crate) description: String,
    /// `title = "…"`.
    pub(crate) title: Option<String>,
    /// `open_world` (`Some(true)`) or `closed_world` (`Some(false)`).
    pub(crate) open_world: Option<bool>,
    /// `idempotent`.
    pub(crate) idempotent: bool,
    /// The sensitive paths.
    pub(crate) sensitive: Vec<Sensitive>,
    /// The summary template.
    pub(crate) summary: Option<Summary>,
    /// `timeout = "…"` in milliseconds.
    pub(crate) timeout_ms: Option<u64>,
    /// The tool's input.
    pub(crate) input: Input,
    /// What each parameter is, in order.
    pub(crate) params: Vec<Role>,
    /// The return type.
    pub(crate) output: Output,
    /// Whether the fn is `async` (otherwise it runs on a thread of its own).
    pub(crate) is_async: bool,
}

/// A sensitive path as written, and the field accesses that check it.
pub(crate) struct Sensitive {
    /// The literal, for the record and for spans.
    pub(crate) lit: LitStr,
    /// The steps to check against the input type; `None` for a `json:` path, which
    /// is checked at registration.
    pub(crate) steps: Option<Vec<Step>>,
}

/// The summary template and the placeholders to check.
pub(crate) struct Summary {
    /// The literal.
    pub(crate) lit: LitStr,
    /// For each placeholder, the field accesses to check (spanned at the literal).
    pub(crate) checks: Vec<Vec<Step>>,
}

/// One step of a checked path.
pub(crate) enum Step {
    /// `.field` (spanned at the literal that names it).
    Field(Member),
    /// `[]`: into each element of a sequence, or each value of a map.
    Any,
}

/// A tool's input.
pub(crate) enum Input {
    /// No input: `{}`.
    None,
    /// One parameter whose type is the whole input.
    Type(Box<Type>),
    /// Plain arguments: the fields of a generated struct.
    Args(Vec<ArgField>),
}

/// A plain argument: one field of the generated input struct.
pub(crate) struct ArgField {
    /// The field (and parameter) name.
    pub(crate) ident: Ident,
    /// The type.
    pub(crate) ty: Box<Type>,
    /// `#[arg(description = "…")]`.
    pub(crate) description: Option<LitStr>,
}

/// What one parameter of the tool fn receives.
pub(crate) enum Role {
    /// The `ToolContext`.
    Context,
    /// A `State<T>` (the `T`).
    State(Box<Type>),
    /// The whole input.
    Input,
    /// Plain argument number `n` (an index into [`Input::Args`]).
    Arg(usize),
}

/// The return type.
pub(crate) struct Output {
    /// The serialized type: the return type, or `T` of `Result<T, E>`.
    pub(crate) ty: Box<Type>,
    /// `Some` for a `Result`, with `E` when it is written.
    pub(crate) result: Option<Option<Box<Type>>>,
}

/// Checks everything parsed about `func`; `Err` holds every error found, parsing's
/// included.
pub(crate) fn check(parsed: Parsed, func: &ItemFn) -> Result<Tool, syn::Error> {
    let Parsed {
        attrs,
        params,
        mut errors,
    } = parsed;
    let sig = &func.sig;

    // The fn itself.
    if let Some(unsafety) = &sig.unsafety {
        errors.error(unsafety, "a tool fn cannot be `unsafe`");
    }
    if let Some(first) = sig.generics.params.first() {
        let what = match first {
            GenericParam::Lifetime(_) => {
                "a tool fn cannot have lifetime parameters: its input is owned and its \
                 future is `'static`"
            }
            GenericParam::Type(_) | GenericParam::Const(_) => {
                "a tool fn cannot be generic: a tool has one concrete input type and one \
                 output type (its schema is generated at compile time)"
            }
        };
        errors.error(&sig.generics, what);
    } else if let Some(wc) = &sig.generics.where_clause {
        errors.error(wc, "a tool fn cannot have a `where` clause");
    }
    if let Some(variadic) = &sig.variadic {
        errors.error(variadic, "a tool fn cannot be variadic");
    }

    // Name and scope.
    let name = match &attrs.name {
        Some(lit) => {
            let value = lit.value();
            if let Err(msg) = segment(&value) {
                errors.error(lit, format!("bad tool name: {msg}"));
            }
            value
        }
        None => {
            let value = unraw(&sig.ident);
            if segment(&value).is_err() {
                errors.error(
                    &sig.ident,
                    format!(
                        "the tool name `{value}` (from the fn name) may use only ASCII \
                         letters, digits, `_` and `-`; give one with `name = \"…\"`"
                    ),
                );
            }
            value
        }
    };
    let scope = match &attrs.scope {
        Some(lit) => {
            let value = lit.value();
            if value.is_empty() {
                errors.error(
                    lit,
                    "the scope path is empty; leave `scope` out for a tool at the root",
                );
            } else {
                for seg in value.split('.') {
                    if let Err(msg) = segment(seg) {
                        errors.error(lit, format!("bad scope segment: {msg}"));
                        break;
                    }
                }
            }
            value
        }
        None => String::new(),
    };

    // Callers.
    let mut callers = Vec::new();
    if let Some(list) = &attrs.callers {
        if list.list.elems.is_empty() {
            errors.error(
                &list.list,
                "`callers = []` allows nobody; list at least one caller, or leave `callers` \
                 out to allow every caller",
            );
        }
        for id in &list.names {
            let text = unraw(id);
            match caller_variant(&text) {
                Some(v) if callers.contains(&v) => {
                    errors.error(id, format!("caller `{text}` is listed twice"));
                }
                Some(v) => callers.push(v),
                None => {
                    let hint = match closest(&text, CALLER_NAMES) {
                        Some(near) => format!("; did you mean `{near}`?"),
                        None => String::new(),
                    };
                    errors.error(
                        id,
                        format!(
                            "unknown caller `{text}`{hint} (callers: {})",
                            CALLER_NAMES.join(", ")
                        ),
                    );
                }
            }
        }
    }

    // Timeout.
    let timeout_ms = attrs.timeout.as_ref().and_then(|lit| {
        match humantime::parse_duration(lit.value().trim()) {
            Ok(d) => match u64::try_from(d.as_millis()) {
                Ok(0) => {
                    errors.error(lit, "the timeout must be at least 1ms");
                    None
                }
                Ok(ms) => Some(ms),
                Err(_) => {
                    errors.error(lit, "the timeout is too long");
                    None
                }
            },
            Err(e) => {
                errors.error(
                    lit,
                    format!(
                        "`timeout` is not a duration: {e} (write it like \"30s\", \"2m\" or \
                         \"1m 30s\")"
                    ),
                );
                None
            }
        }
    });

    // Parameters.
    let (input, roles) = classify(&params, &mut errors);

    // Sensitive paths and the summary (the first step of a plain-arguments input is
    // checked here; the rest by generated field accesses).
    let mut sensitive = Vec::new();
    for lit in &attrs.sensitive {
        let text = lit.value();
        let (grammar, json) = toolmark_syntax::path::split_json(&text);
        let segs = match toolmark_syntax::path::parse(grammar) {
            Ok(segs) => segs,
            Err(e) => {
                let pos = e.position
                    + if json {
                        toolmark_syntax::path::JSON_PREFIX.len()
                    } else {
                        0
                    };
                errors.error(
                    lit,
                    format!(
                        "malformed sensitive path {text:?} at position {pos}: {} (the \
                         grammar is `seg(.seg|[])*`, e.g. \"cards[].cvc\")",
                        e.message
                    ),
                );
                continue;
            }
        };
        if matches!(input, Input::None) {
            errors.error(
                lit,
                "this tool takes no input, so it has no sensitive paths",
            );
            continue;
        }
        if json {
            sensitive.push(Sensitive {
                lit: lit.clone(),
                steps: None,
            });
            continue;
        }
        if !first_is_arg(&segs, &input, lit, "sensitive path", &mut errors) {
            continue;
        }
        let Some(steps) = rust_steps(&segs, lit, true, &mut errors) else {
            continue;
        };
        sensitive.push(Sensitive {
            lit: lit.clone(),
            steps: Some(steps),
        });
    }
    let summary = attrs.summary.as_ref().and_then(|lit| {
        let parts = match toolmark_syntax::template::parse(&lit.value()) {
            Ok(parts) => parts,
            Err(msg) => {
                errors.error(lit, format!("bad summary template: {msg}"));
                return None;
            }
        };
        let mut checks = Vec::new();
        for field in toolmark_syntax::template::fields(&parts) {
            if matches!(input, Input::None) {
                errors.error(
                    lit,
                    format!(
                        "summary placeholder `{{{field}}}` names an input field, but this tool \
                         takes no input"
                    ),
                );
                continue;
            }
            // A numeric step indexes an array: only the part before it is checked.
            let segs: Vec<Seg> = field
                .split('.')
                .take_while(|s| !s.bytes().all(|b| b.is_ascii_digit()))
                .map(|s| Seg::Key(s.to_owned()))
                .collect();
            if !first_is_arg(&segs, &input, lit, "summary placeholder", &mut errors) {
                continue;
            }
            match rust_steps(&segs, lit, false, &mut errors) {
                Some(steps) if !steps.is_empty() => checks.push(steps),
                _ => {}
            }
        }
        Some(Summary {
            lit: lit.clone(),
            checks,
        })
    });

    let output = output(&sig.output, &mut errors);
    let description = match &attrs.description {
        Some(lit) => lit.value(),
        None => doc_description(&func.attrs),
    };

    errors.finish()?;
    Ok(Tool {
        name,
        scope,
        effect: attrs.effect.map(|(e, _)| e),
        callers,
        description,
        title: attrs.title.map(|t| t.value()),
        open_world: attrs.world.map(|(open, _)| open),
        idempotent: attrs.idempotent.is_some(),
        sensitive,
        summary,
        timeout_ms,
        input,
        params: roles,
        output,
        is_async: sig.asyncness.is_some(),
    })
}

/// Sorts the parameters into extractors, the input type, and plain arguments.
fn classify(params: &[Param], errors: &mut Errors) -> (Input, Vec<Role>) {
    let mut roles = Vec::with_capacity(params.len());
    let mut context_seen = false;
    let mut input_types: Vec<&Type> = Vec::new();
    let mut args: Vec<ArgField> = Vec::new();
    for param in params {
        let (pat, ty, arg) = match param {
            Param::Receiver(span) => {
                errors.at(
                    *span,
                    "a tool fn cannot take `self`: make it a free fn (use a `State<T>` \
                     parameter for shared app state)",
                );
                continue;
            }
            Param::Typed { pat, ty, arg } => (pat, ty, arg),
        };
        if let Some(problem) = unsupported_type(ty) {
            errors.error(ty, problem);
            continue;
        }
        let extractor = if is_context(ty) {
            Some("ToolContext")
        } else if state_type(ty).is_some() {
            Some("State<T>")
        } else {
            None
        };
        if let (Some(what), Some(ArgAttr { span, .. })) = (extractor, arg) {
            errors.at(
                *span,
                format!(
                    "`#[arg]` marks a plain argument (a field of the input), but a \
                     `{what}` parameter is an extractor; remove `#[arg]`"
                ),
            );
            continue;
        }
        if is_context(ty) {
            if context_seen {
                errors.error(
                    ty,
                    "a tool fn takes at most one `ToolContext`; clone it inside the fn if \
                     you need two",
                );
            }
            context_seen = true;
            roles.push(Role::Context);
        } else if let Some(state) = state_type(ty) {
            roles.push(Role::State(Box::new(state.clone())));
        } else if arg.is_some() || is_plain(ty) {
            let ident = match &**pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => p.ident.clone(),
                other => {
                    errors.error(
                        other,
                        "a plain argument must be named by a plain identifier \
                         (`name: Type`): its name is the name of the input field",
                    );
                    continue;
                }
            };
            roles.push(Role::Arg(args.len()));
            args.push(ArgField {
                ident,
                ty: ty.clone(),
                description: arg.as_ref().and_then(|a| a.description.clone()),
            });
        } else {
            if let Some(first) = input_types.first() {
                errors.error(
                    ty,
                    format!(
                        "two input types, `{}` and `{}`: a tool has one input, so wrap them \
                         in one struct (or mark each parameter `#[arg]` to make it a field \
                         of a generated input)",
                        type_text(first),
                        type_text(ty)
                    ),
                );
            }
            input_types.push(ty);
            roles.push(Role::Input);
        }
    }
    if let (Some(ty), false) = (input_types.first(), args.is_empty()) {
        let names: Vec<String> = args
            .iter()
            .map(|a| format!("`{}`", unraw(&a.ident)))
            .collect();
        errors.error(
            ty,
            format!(
                "`{}` is an input type (the whole input), so it cannot be mixed with the \
                 plain argument{} {}; wrap them in one struct (or mark this parameter \
                 `#[arg]` to make it one more field of a generated input)",
                type_text(ty),
                if names.len() == 1 { "" } else { "s" },
                names.join(", ")
            ),
        );
    }
    let input = match input_types.first() {
        Some(ty) => Input::Type(Box::new((*ty).clone())),
        None if args.is_empty() => Input::None,
        None => Input::Args(args),
    };
    (input, roles)
}

/// Why `ty` cannot be a tool parameter at all, if it cannot.
fn unsupported_type(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Reference(_) => Some(
            "a tool parameter cannot be a reference: the runtime passes owned values \
             (take `String` for `&str`, `ToolContext` for `&ToolContext`)",
        ),
        Type::ImplTrait(_) => Some(
            "a tool fn cannot be generic: `impl Trait` in a parameter is a type parameter; \
             name a concrete type",
        ),
        Type::Paren(p) => unsupported_type(&p.elem),
        Type::Group(g) => unsupported_type(&g.elem),
        _ => None,
    }
}

/// The last segment of a path type.
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        Type::Paren(p) => last_segment(&p.elem),
        Type::Group(g) => last_segment(&g.elem),
        _ => None,
    }
}

/// `ToolContext` (by its last path segment).
fn is_context(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == "ToolContext" && s.arguments.is_none())
}

/// The `T` of `State<T>` (by its last path segment).
fn state_type(ty: &Type) -> Option<&Type> {
    let seg = last_segment(ty)?;
    if seg.ident != "State" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    match args.args.iter().collect::<Vec<_>>().as_slice() {
        [GenericArgument::Type(t)] => Some(t),
        _ => None,
    }
}

/// The std types a plain argument may have without `#[arg]`.
const PLAIN: &[&str] = &[
    "bool", "char", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128",
    "usize", "f32", "f64", "String", "Vec", "VecDeque", "Option", "HashMap", "BTreeMap", "HashSet",
    "BTreeSet",
];

/// Is `ty` a std type that makes its parameter a plain argument?
fn is_plain(ty: &Type) -> bool {
    match ty {
        Type::Tuple(t) => !t.elems.is_empty(),
        Type::Array(_) => true,
        Type::Paren(p) => is_plain(&p.elem),
        Type::Group(g) => is_plain(&g.elem),
        _ => {
            last_segment(ty).is_some_and(|s| PLAIN.iter().any(|p| s.ident == p))
                || is_json_value(ty)
        }
    }
}

/// `Value`, `serde_json::Value` or `::serde_json::Value`: any JSON value, a plain
/// argument like the others (a whole input of any shape would leave the input
/// without properties, so nothing an agent sends could be checked against them).
fn is_json_value(ty: &Type) -> bool {
    let Type::Path(p) = ty else {
        return false;
    };
    if p.qself.is_some() || p.path.segments.iter().any(|s| !s.arguments.is_none()) {
        return false;
    }
    let names: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    match names.as_slice() {
        [v] => v == "Value" && p.path.leading_colon.is_none(),
        [krate, v] => krate == "serde_json" && v == "Value",
        _ => false,
    }
}

/// Reads the return type.
fn output(ret: &ReturnType, errors: &mut Errors) -> Output {
    let ty = match ret {
        ReturnType::Default => {
            return Output {
                ty: Box::new(syn::parse_quote!(())),
                result: None,
            }
        }
        ReturnType::Type(_, ty) => ty,
    };
    let impl_trait = "a tool must return a concrete type, not `impl Trait`: the output is \
                      serialized (and its schema generated) by type";
    if matches!(**ty, Type::ImplTrait(_)) {
        errors.error(ty, impl_trait);
    }
    if let Some(seg) = last_segment(ty).filter(|s| s.ident == "Result") {
        if let PathArguments::AngleBracketed(args) = &seg.arguments {
            let types: Vec<&Type> = args
                .args
                .iter()
                .filter_map(|a| match a {
                    GenericArgument::Type(t) => Some(t),
                    _ => None,
                })
                .collect();
            if let Some(ok) = types.first() {
                if matches!(ok, Type::ImplTrait(_)) {
                    errors.error(ok, impl_trait);
                }
                return Output {
                    ty: Box::new((*ok).clone()),
                    result: Some(types.get(1).map(|e| Box::new((*e).clone()))),
                };
            }
        }
    }
    Output {
        ty: ty.clone(),
        result: None,
    }
}

/// The description from the doc comment: lines joined, each without rustdoc's
/// leading space, the whole trimmed.
fn doc_description(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let syn::Meta::NameValue(nv) = &attr.meta {
            if let Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
            {
                let text = s.value();
                // `split`, not `lines`: an empty `///` line is a paragraph break.
                for line in text.split('\n') {
                    let line = line.strip_prefix(' ').unwrap_or(line);
                    lines.push(line.trim_end().to_owned());
                }
            }
        }
    }
    lines.join("\n").trim().to_owned()
}

/// Checks that the first segment of a path names a plain argument (when the input
/// is plain arguments). `false` after reporting an error.
fn first_is_arg(
    segs: &[Seg],
    input: &Input,
    lit: &LitStr,
    what: &str,
    errors: &mut Errors,
) -> bool {
    let (Input::Args(args), Some(Seg::Key(first))) = (input, segs.first()) else {
        return true;
    };
    let first = first.strip_prefix("r#").unwrap_or(first);
    if args.iter().any(|a| unraw(&a.ident) == first) {
        return true;
    }
    let list: Vec<String> = args
        .iter()
        .map(|a| format!("`{}`", unraw(&a.ident)))
        .collect();
    errors.error(
        lit,
        format!(
            "{what} names `{first}`, which is not an argument of this tool (its \
             arguments: {})",
            list.join(", ")
        ),
    );
    false
}

/// Turns parsed segments into field accesses spanned at `lit`. A segment that is a
/// keyword names the raw field (`type` is `r#type`). A segment that is no Rust field
/// name at all is an error when `strict` (a sensitive path names Rust fields); for a
/// summary placeholder (a JSON name) the check stops before it.
fn rust_steps(segs: &[Seg], lit: &LitStr, strict: bool, errors: &mut Errors) -> Option<Vec<Step>> {
    let mut steps = Vec::with_capacity(segs.len());
    for seg in segs {
        match seg {
            Seg::Any => steps.push(Step::Any),
            Seg::Key(k) => {
                if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) {
                    match k.parse::<u32>() {
                        Ok(index) if index == 0 || !k.starts_with('0') => {
                            steps.push(Step::Field(Member::Unnamed(syn::Index {
                                index,
                                span: check_span(lit),
                            })));
                            continue;
                        }
                        _ if strict => {
                            errors.error(lit, format!("`{k}` is not a tuple field index"));
                            return None;
                        }
                        _ => return Some(steps),
                    }
                }
                let ident = syn::parse_str::<Ident>(k)
                    .or_else(|_| syn::parse_str::<Ident>(&format!("r#{k}")));
                match ident {
                    Ok(mut id) => {
                        id.set_span(check_span(lit));
                        steps.push(Step::Field(Member::Named(id)));
                    }
                    Err(_) if strict => {
                        errors.error(
                            lit,
                            format!(
                                "`{k}` is not a Rust field name; to name the JSON property \
                                 `{k}`, write a `json:` path: \"json:{}\"",
                                lit.value()
                            ),
                        );
                        return None;
                    }
                    Err(_) => return Some(steps),
                }
            }
        }
    }
    Some(steps)
}

/// The span of a generated field access that checks a path written in `lit`: located
/// at the literal (rustc's "no field `cvv` on type `Card`" points there), but with
/// the macro's hygiene, so rustc treats it as macro-made and offers no "a field with
/// a similar name exists" rewrite, which would replace the whole literal with a bare
/// identifier (`sensitive = cvc`, not valid in the attribute). Field names are not
/// hygienic, so the access resolves exactly as if written at the call site. (The
/// price: rustc's "available fields are: …" note is not shown either.)
fn check_span(lit: &LitStr) -> Span {
    lit.span().resolved_at(Span::mixed_site())
}

/// The text of an identifier without `r#`.
pub(crate) fn unraw(id: &Ident) -> String {
    let s = id.to_string();
    s.strip_prefix("r#")
        .map_or_else(|| s.clone(), str::to_owned)
}

/// A type as the user wrote it, for messages.
fn type_text(ty: &Type) -> String {
    ty.to_token_stream()
        .to_string()
        .replace(" < ", "<")
        .replace(" >", ">")
        .replace("< ", "<")
        .replace(" ,", ",")
        .replace(" :: ", "::")
}

/// The caller names `callers = [..]` accepts.
const CALLER_NAMES: &[&str] = &["human", "inapp", "webmcp", "mcp", "tour", "test"];

/// The `Caller` variant of a caller name.
fn caller_variant(name: &str) -> Option<&'static str> {
    Some(match name {
        "human" => "Human",
        "inapp" => "InApp",
        "webmcp" => "WebMcp",
        "mcp" => "Mcp",
        "tour" => "Tour",
        "test" => "Test",
        _ => return None,
    })
}

/// Checks one name or scope segment: `[A-Za-z0-9_-]+` (the runtime's grammar,
/// `toolmark_syntax::name`).
fn segment(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("a segment cannot be empty (`a..b`, a leading or a trailing `.`)".to_owned());
    }
    match toolmark_syntax::name::first_invalid(s) {
        Some(c) => Err(format!(
            "`{s}` contains {c:?}; a segment uses only ASCII letters, digits, `_` and `-`"
        )),
        None => Ok(()),
    }
}

/// The known word nearest to `word`, when it is near enough to be a likely typo.
pub(crate) fn closest(word: &str, known: &[&'static str]) -> Option<&'static str> {
    let word = word.to_ascii_lowercase();
    let limit = word.chars().count().div_ceil(3);
    known
        .iter()
        .map(|k| (distance(&word, k), *k))
        .filter(|(d, _)| *d <= limit.max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Edit distance with adjacent transpositions (optimal string alignment).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    // The grammar of sensitive paths and summary templates is toolmark-syntax's
    // (the runtime parses with it too); its tables and properties are tested there.

    #[test]
    fn typos_suggest_the_closest_key() {
        let keys = crate::attr::KEYS;
        assert_eq!(closest("sensitve", keys), Some("sensitive"));
        assert_eq!(closest("scpoe", keys), Some("scope"));
        assert_eq!(closest("readonly", keys), Some("read_only"));
        assert_eq!(closest("tile", keys), Some("title"));
        assert_eq!(closest("Name", keys), Some("name"));
        assert_eq!(closest("xyz", keys), None);
        assert_eq!(closest("effect", keys), None);
    }

    #[test]
    fn segments_follow_the_name_grammar() {
        assert!(segment("fill").is_ok());
        assert!(segment("a-b_2").is_ok());
        assert!(segment("").is_err());
        assert!(segment("a b").unwrap_err().contains("' '"));
        assert!(segment("café").is_err());
    }

    #[test]
    fn a_json_value_is_a_plain_argument_in_each_spelling() {
        let plain = |s: &str| is_plain(&syn::parse_str::<Type>(s).unwrap());
        assert!(plain("Value"));
        assert!(plain("serde_json::Value"));
        assert!(plain("::serde_json::Value"));
        assert!(plain("Option<Value>"));
        // A type of the user's own, named by a path: the whole input.
        assert!(!plain("crate::Value"));
        assert!(!plain("my::Value"));
        assert!(!plain("::Value"));
        assert!(!plain("Value<T>"));
        assert!(!plain("Query"));
    }

    #[test]
    fn distance_counts_edits_and_transpositions() {
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", "abc"), 0);
        assert_eq!(distance("abc", "acb"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
