//! Stage 3, writing: the user's fn as written, then a `const _: () = { … };` block
//! holding everything generated (so nothing leaks into the user's namespace): the
//! plain-arguments input struct, compile-time checks spanned at the user's tokens,
//! the record's functions, and the `inventory` submission of the `ToolRecord`.
//!
//! Generated code names the runtime only as `::toolmark::__private`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{ItemFn, LitStr};

use crate::attr::EffectKey;
use crate::valid::{Input, Role, Step, Tool};

/// The generated input struct of a plain-arguments tool.
const ARGS_STRUCT: &str = "__ToolmarkInput";

/// Writes the user's fn and its registration.
pub(crate) fn tool(tool: &Tool, func: &ItemFn) -> TokenStream {
    let p = quote!(::toolmark::__private);
    let input_ty = input_type(tool);
    let out_ty = &tool.output.ty;

    let args_struct = args_struct(tool);
    // The input type's checks are read once, spanned at the type, so a missing
    // derive is one error per missing derive (with the messages of
    // `ToolInputSchema` / `ToolInputDecode` / `ToolInputSend`), not one per use.
    let input_fns = match &tool.input {
        Input::Type(ty) => {
            let p = quote_spanned!(ty.span()=> ::toolmark::__private);
            let checked = checked(ty, &["ToolInputSchema", "ToolInputDecode", "ToolInputSend"]);
            // Every use of the input but the sensitive-path checks goes through this
            // alias: when a check fails they all see an error type, and say nothing.
            quote_spanned! {ty.span()=>
                type __ToolmarkChecked = #checked;
                const __TOOLMARK_INPUT: #p::InputFns<__ToolmarkChecked> =
                    #p::input_fns::<__ToolmarkChecked>();
            }
        }
        Input::None | Input::Args(_) => quote! {
            const __TOOLMARK_INPUT: #p::InputFns<#input_ty> = #p::input_fns::<#input_ty>();
        },
    };
    let error_check = match &tool.output.result {
        Some(Some(err)) => {
            let p = quote_spanned!(err.span()=> ::toolmark::__private);
            quote_spanned! {err.span()=>
                const _: usize = <#err as #p::ToolErrorType>::OK;
            }
        }
        _ => TokenStream::new(),
    };
    let path_checks = path_checks(tool, &input_ty);
    let run_input_ty = match &tool.input {
        Input::Type(_) => quote!(__ToolmarkChecked),
        Input::None | Input::Args(_) => input_ty.clone(),
    };
    let run = run_fn(tool, &func.sig.ident, &run_input_ty);

    let states: Vec<TokenStream> = tool
        .params
        .iter()
        .filter_map(|r| match r {
            Role::State(t) => Some(quote!(#p::StateNeed::of::<#t>())),
            _ => None,
        })
        .collect();
    // Most tools take no state: they share one fn rather than each compile its own.
    let (states_fn, states_ref) = if states.is_empty() {
        (TokenStream::new(), quote!(#p::no_states))
    } else {
        (
            quote! {
                fn __toolmark_states() -> ::std::vec::Vec<#p::StateNeed> {
                    ::std::vec![#(#states),*]
                }
            },
            quote!(__toolmark_states),
        )
    };
    // A sync tool's thread takes its accounting from the run's context.
    let uses_context = !tool.is_async
        || tool
            .params
            .iter()
            .any(|r| matches!(r, Role::Context | Role::State(_)));
    let name = &tool.name;
    let scope = &tool.scope;
    let effect = format_ident!(
        "{}",
        match tool.effect {
            None => "Write",
            Some(EffectKey::ReadOnly) => "Read",
            Some(EffectKey::Consequential) => "Consequential",
            Some(EffectKey::Destructive) => "Destructive",
        }
    );
    let callers = tool.callers.iter().map(|c| format_ident!("{}", c));
    let description = &tool.description;
    let title = opt_str(tool.title.as_deref());
    let open_world = match tool.open_world {
        Some(open) => quote!(::core::option::Option::Some(#open)),
        None => quote!(::core::option::Option::None),
    };
    let idempotent = if tool.idempotent {
        quote!(::core::option::Option::Some(true))
    } else {
        quote!(::core::option::Option::None)
    };
    let sensitive = tool.sensitive.iter().map(|s| s.lit.value());
    let summary = opt_str(tool.summary.as_ref().map(|s| s.lit.value()).as_deref());
    let timeout = match tool.timeout_ms {
        Some(ms) => quote!(::core::option::Option::Some(#ms)),
        None => quote!(::core::option::Option::None),
    };

    // The runtime hands a tool owned values, so a sync tool's parameters are by
    // value by design (clippy skips async fns for this lint).
    let allow = if tool.is_async {
        TokenStream::new()
    } else {
        quote!(#[allow(clippy::needless_pass_by_value)])
    };

    quote! {
        #allow
        #func

        const _: () = {
            #args_struct
            #input_fns
            #error_check
            #path_checks

            #states_fn

            #[allow(unused_imports)]
            fn __toolmark_output_schema() -> ::core::option::Option<#p::serde_json::Value> {
                use #p::NoOutputSchema as _;
                (&#p::OutputSchema::<#out_ty>::new()).output_schema()
            }

            #run

            static __TOOLMARK_SCHEMA: ::std::sync::OnceLock<::std::sync::Arc<#p::serde_json::Value>> =
                ::std::sync::OnceLock::new();
            static __TOOLMARK_OUTPUT_SCHEMA: ::std::sync::OnceLock<
                ::core::option::Option<::std::sync::Arc<#p::serde_json::Value>>,
            > = ::std::sync::OnceLock::new();

            #p::inventory::submit! {
                #p::ToolRecord {
                    name: #name,
                    scope: #scope,
                    effect: #p::Effect::#effect,
                    callers: &[#(#p::Caller::#callers),*],
                    description: #description,
                    title: #title,
                    sensitive: &[#(#sensitive),*],
                    summary: #summary,
                    timeout_ms: #timeout,
                    open_world: #open_world,
                    idempotent: #idempotent,
                    uses_context: #uses_context,
                    states: #states_ref,
                    input_schema: __TOOLMARK_INPUT.schema,
                    output_schema: __toolmark_output_schema,
                    decode: __TOOLMARK_INPUT.decode,
                    run: #p::run_decoded::<__ToolmarkStart>,
                    prepare: #p::prepare_input::<__ToolmarkStart>,
                    module_path: ::core::module_path!(),
                    file: ::core::file!(),
                    line: ::core::line!(),
                    schema_cache: &__TOOLMARK_SCHEMA,
                    output_cache: &__TOOLMARK_OUTPUT_SCHEMA,
                }
            }
        };
    }
}

/// On error: the user's fn (so its uses still resolve and nothing cascades) and
/// every error; no registration.
pub(crate) fn fallback(func: &ItemFn, error: &syn::Error) -> TokenStream {
    let error = error.to_compile_error();
    quote! {
        #[allow(dead_code)]
        #func
        #error
    }
}

/// `#[tool]` on something that is not a fn: an error at the item's first token and
/// the item unchanged. Tokens that are no item at all are given back as they are, for
/// the compiler to report.
pub(crate) fn not_a_fn(item: TokenStream) -> TokenStream {
    let Ok(parsed) = syn::parse2::<syn::Item>(item.clone()) else {
        return item;
    };
    let span = parsed
        .to_token_stream()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span());
    let error = syn::Error::new(span, "`#[tool]` goes on a fn (an `async fn` or a plain fn)")
        .to_compile_error();
    quote! {
        #item
        #error
    }
}

/// The input type as the generated code names it.
fn input_type(tool: &Tool) -> TokenStream {
    match &tool.input {
        Input::None => quote!(::toolmark::__private::NoInput),
        Input::Type(ty) => ty.to_token_stream(),
        Input::Args(_) => format_ident!("{}", ARGS_STRUCT).to_token_stream(),
    }
}

/// The struct of a plain-arguments input (nothing for the other forms).
fn args_struct(tool: &Tool) -> TokenStream {
    let Input::Args(args) = &tool.input else {
        return TokenStream::new();
    };
    let ident = format_ident!("{}", ARGS_STRUCT);
    let title = format!("{}Input", pascal(&tool.name));
    // Checked here, at the argument's type, and named by an alias: the derives below
    // and the run (which takes the arguments as parameters of these types) see an
    // error type when a check fails, and report nothing of their own.
    let aliases = args.iter().enumerate().map(|(n, a)| {
        let alias = arg_alias(n);
        let ty = checked(&a.ty, &["ToolArgSchema", "ToolArgDecode", "ToolArgSend"]);
        quote!(type #alias = #ty;)
    });
    let fields = args.iter().enumerate().map(|(n, a)| {
        let name = &a.ident;
        let alias = arg_alias(n);
        let doc = a
            .description
            .as_ref()
            .map(|d| quote!(#[schemars(description = #d)]));
        quote!(#doc #name: #alias)
    });
    quote! {
        #(#aliases)*
        #[derive(::toolmark::__private::serde::Deserialize, ::toolmark::__private::schemars::JsonSchema)]
        #[serde(crate = "::toolmark::__private::serde")]
        #[schemars(crate = "::toolmark::__private::schemars", title = #title)]
        struct #ident {
            #(#fields,)*
        }
    }
}

/// The alias of plain argument `n`'s checked type.
fn arg_alias(n: usize) -> syn::Ident {
    format_ident!("__ToolmarkArg{}", n)
}

/// `ty` as `<ty as Checked<{ <ty as Check>::OK }, …>>::Ty`, spanned at `ty`: the
/// same type once every check trait named is implemented; otherwise one error per
/// missing trait at the user's type (with that trait's message), and an error type
/// that keeps every use of it from reporting again.
fn checked(ty: &syn::Type, checks: &[&str]) -> TokenStream {
    let span = ty.span();
    let p = quote_spanned!(span=> ::toolmark::__private);
    let mut reads: Vec<TokenStream> = checks
        .iter()
        .map(|c| {
            let c = format_ident!("{}", c, span = span);
            quote_spanned!(span=> { <#ty as #p::#c>::OK })
        })
        .collect();
    while reads.len() < 3 {
        reads.push(quote_spanned!(span=> 0));
    }
    quote_spanned!(span=> <#ty as #p::Checked<#(#reads),*>>::Ty)
}

/// `fill_card` → `FillCard` (for the generated input's schema title).
fn pascal(name: &str) -> String {
    name.split(['_', '-'])
        .filter(|s| !s.is_empty())
        .map(|s| {
            let mut c = s.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// `Some("…")` / `None`.
fn opt_str(s: Option<&str>) -> TokenStream {
    match s {
        Some(s) => quote!(::core::option::Option::Some(#s)),
        None => quote!(::core::option::Option::None),
    }
}

/// A never-called fn whose field accesses check every sensitive path and summary
/// placeholder against the input type, spanned at the literal that names them.
fn path_checks(tool: &Tool, input_ty: &TokenStream) -> TokenStream {
    let mut checks = Vec::new();
    for s in &tool.sensitive {
        if let Some(steps) = &s.steps {
            checks.push(check_steps(steps, &s.lit));
        }
    }
    if let Some(summary) = &tool.summary {
        for steps in &summary.checks {
            checks.push(check_steps(steps, &summary.lit));
        }
    }
    if checks.is_empty() {
        return TokenStream::new();
    }
    quote! {
        // `Peel`'s inherent method wins for `Option`, leaving `PeelAny` unused.
        #[allow(unused_imports)]
        fn __toolmark_check(__toolmark_x: &#input_ty) {
            #(#checks)*
        }
        const _: fn(&#input_ty) = __toolmark_check;
    }
}

/// The nested accesses for one path: `Option` is peeled, `[]` iterates a sequence's
/// elements or a map's values.
fn check_steps(steps: &[Step], lit: &LitStr) -> TokenStream {
    let span = lit.span();
    let p = quote_spanned!(span=> ::toolmark::__private);
    let var = |n: usize| format_ident!("__toolmark_x{}", n, span = span);
    let mut body = {
        let last = if steps.is_empty() {
            format_ident!("__toolmark_x", span = span)
        } else {
            var(steps.len())
        };
        quote_spanned!(span=> let _ = #last;)
    };
    for (n, step) in steps.iter().enumerate().rev() {
        let cur = if n == 0 {
            format_ident!("__toolmark_x", span = span)
        } else {
            var(n)
        };
        let next = var(n + 1);
        body = match step {
            Step::Field(member) => quote_spanned! {span=>
                if let ::core::option::Option::Some(#next) = {
                    use #p::PeelAny as _;
                    #p::Peel(&(*#cur).#member).peel()
                } {
                    #body
                }
            },
            Step::Any => quote_spanned! {span=>
                for __toolmark_item in #p::SequenceOrMap::sensitive_items(#cur) {
                    if let ::core::option::Option::Some(#next) = {
                        use #p::PeelAny as _;
                        #p::Peel(__toolmark_item).peel()
                    } {
                        #body
                    }
                }
            },
        };
    }
    quote!({ #body })
}

/// `__toolmark_start`: takes the input and the states, then hands the user's fn to
/// the runtime's generic run (`run_async`, or `run_sync` on a thread of its own when
/// it is not async) with the conversion of what it returns. No `async` block is
/// written per tool: the run's async block is the runtime's, compiled (and
/// borrow-checked) once in `toolmark`, instantiated per tool. An async fn's call
/// only builds its future, so nothing of the user's code runs before the first
/// poll, as before.
fn run_fn(tool: &Tool, fn_ident: &syn::Ident, input_ty: &TokenStream) -> TokenStream {
    let p = quote!(::toolmark::__private);
    let take = match &tool.input {
        Input::None => quote! {
            let _ = __toolmark_value;
        },
        Input::Type(_) => quote! {
            let __toolmark_input = __toolmark_value;
        },
        // The fields become the parameters of `__toolmark_call`, typed by their
        // checked aliases: when a check fails its signature names an error type,
        // and the run reports nothing more (a non-`Send` argument is reported once,
        // by `ToolArgSend`, not again as a non-`Send` future).
        Input::Args(args) => {
            let fields = args.iter().enumerate().map(|(n, a)| {
                let name = &a.ident;
                let local = format_ident!("__toolmark_arg{}", n);
                quote!(#name: #local)
            });
            quote! {
                let #input_ty { #(#fields),* } = __toolmark_value;
            }
        }
    };
    let mut states = Vec::new();
    let mut call_args = Vec::new();
    let mut uses_ctx = false;
    for (n, role) in tool.params.iter().enumerate() {
        match role {
            Role::Context => {
                uses_ctx = true;
                call_args.push(quote!(__toolmark_ctx));
            }
            Role::State(t) => {
                let local = format_ident!("__toolmark_state{}", n);
                let p = quote_spanned!(t.span()=> ::toolmark::__private);
                states.push(quote_spanned! {t.span()=>
                    let #local = match #p::state::<#t>(&__toolmark_ctx) {
                        ::core::result::Result::Ok(__toolmark_state) => __toolmark_state,
                        ::core::result::Result::Err(__toolmark_err) => return #p::failed(__toolmark_err),
                    };
                });
                call_args.push(local.to_token_stream());
            }
            Role::Input => call_args.push(quote!(__toolmark_input)),
            Role::Arg(i) => call_args.push(format_ident!("__toolmark_arg{}", i).to_token_stream()),
        }
    }
    let unit = matches!(&*tool.output.ty, syn::Type::Tuple(t) if t.elems.is_empty())
        && tool.output.result.is_none();
    // The output type's check is read once, spanned at the type.
    let out_ty = &tool.output.ty;
    let output = {
        let p = quote_spanned!(out_ty.span()=> ::toolmark::__private);
        let checked = checked(out_ty, &["ToolOutput"]);
        quote_spanned!(out_ty.span()=> #p::output_fn::<#checked>())
    };
    // What the fn returns, as the run's result: a shared fn for `()`, the output
    // conversion's fn for a plain `T`, one shared fn per `(T, E)` for a `Result`
    // with `E` written, a closure for a `Result` alias.
    let finish = if unit {
        quote!(#p::unit_output)
    } else if let Some(Some(err)) = &tool.output.result {
        // One shared fn per `(T, E)`: the conversion of `E` is picked by autoref (a
        // non-`Display` `E` is reported by `ToolErrorType` alone, `AnyConv` keeping
        // this from reporting it again). `T` named through its check, as below.
        let checked_ok = checked(out_ty, &["ToolOutput"]);
        let sp = quote_spanned!(out_ty.span()=> ::toolmark::__private);
        quote! {
            #sp::result_finish::<#checked_ok, #err, _>({
                use #p::DisplayConv as _;
                use #p::AnyConv as _;
                #p::ErrOf::<#err>::new().conv()
            })
        }
    } else if tool.output.result.is_some() {
        // A `Result` alias whose `E` is not written (`anyhow::Result<T>`): the
        // conversion is picked where the closure's `E` is known.
        quote! {
            |__toolmark_out| match __toolmark_out {
                ::core::result::Result::Ok(__toolmark_ok) => (#output)(__toolmark_ok),
                ::core::result::Result::Err(__toolmark_err) => ::core::result::Result::Err({
                    use #p::DisplayErr as _;
                    #p::ErrWrap(__toolmark_err).into_tool_error()
                }),
            }
        }
    } else {
        output
    };
    // Spanned at the fn name: a future that is not `Send` is reported there.
    let call = quote_spanned!(fn_ident.span()=> #fn_ident(#(#call_args),*));
    let start = if tool.is_async {
        let release_ctx = if uses_ctx {
            TokenStream::new()
        } else {
            quote!(::core::mem::drop(__toolmark_ctx);)
        };
        // What the input was checked as (see `Run`).
        let checked_input = match &tool.input {
            Input::Args(args) => {
                let aliases = (0..args.len()).map(arg_alias);
                quote!((#(#aliases,)*))
            }
            Input::None | Input::Type(_) => input_ty.clone(),
        };
        let sp = quote_spanned!(fn_ident.span()=> ::toolmark::__private);
        let run = quote_spanned! {fn_ident.span()=>
            #sp::run_async(#sp::Run::<_, #checked_input>::new(#call, #finish))
        };
        quote! {
            #release_ctx
            #run
        }
    } else if uses_ctx {
        quote!(#p::run_sync_with_context(__toolmark_ctx, move |__toolmark_ctx| #call, #finish))
    } else {
        quote!(#p::run_sync(__toolmark_ctx, move || #call, #finish))
    };
    let start_fn = match &tool.input {
        Input::Args(args) => {
            let locals: Vec<syn::Ident> = (0..args.len())
                .map(|n| format_ident!("__toolmark_arg{}", n))
                .collect();
            let aliases = (0..args.len()).map(arg_alias);
            quote! {
                fn __toolmark_start(
                    __toolmark_ctx: #p::ToolContext,
                    __toolmark_value: #input_ty,
                ) -> #p::ToolFuture {
                    #take
                    __toolmark_call(__toolmark_ctx, #(#locals),*)
                }

                #[allow(unused_imports, clippy::too_many_arguments)]
                fn __toolmark_call(
                    __toolmark_ctx: #p::ToolContext,
                    #(#locals: #aliases),*
                ) -> #p::ToolFuture {
                    #(#states)*
                    #start
                }
            }
        }
        Input::None | Input::Type(_) => quote! {
            #[allow(unused_imports)]
            fn __toolmark_start(
                __toolmark_ctx: #p::ToolContext,
                __toolmark_value: #input_ty,
            ) -> #p::ToolFuture {
                #take
                #(#states)*
                #start
            }
        },
    };
    quote! {
        #start_fn

        // Names the start for the runtime's generic run and prepare.
        struct __ToolmarkStart;
        impl #p::ToolStart for __ToolmarkStart {
            type Input = #input_ty;
            const START: fn(#p::ToolContext, #input_ty) -> #p::ToolFuture = __toolmark_start;
        }
    }
}
