//! The `#[tool]` attribute of [Toolmark](https://docs.rs/toolmark). Use it through
//! the `toolmark` crate (`toolmark::tool`); the generated code names the runtime only
//! as `::toolmark::__private`, so this crate is never a dependency of yours.
//!
//! The expansion has three stages, one file each: `attr.rs` parses the attribute and
//! the fn's parameters, `valid.rs` checks them (collecting every error, each spanned at
//! the offending token), `expand.rs` writes the registration. On any error the user's
//! fn is still emitted, without registration, so one mistake does not cascade.

mod attr;
mod expand;
mod valid;

use proc_macro::TokenStream;

/// Turns an `async fn` (or a plain fn) into a tool that agents can discover and
/// call; see `toolmark::tool` for the full documentation.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let Ok(mut func) = syn::parse2::<syn::ItemFn>(item.clone()) else {
        return expand::not_a_fn(item).into();
    };
    let parsed = attr::parse(attr.into(), &mut func);
    valid::check(parsed, &func)
        .map(|tool| expand::tool(&tool, &func))
        .unwrap_or_else(|e| expand::fallback(&func, &e))
        .into()
}
