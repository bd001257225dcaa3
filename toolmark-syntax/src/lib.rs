//! The grammar of [Toolmark](https://docs.rs/toolmark)'s sensitive paths, summary
//! templates and name segments, in one place.
//!
//! The `toolmark` runtime (registration, dynamic tools, forms) and its `#[tool]`
//! macro (`toolmark-macros`, at compile time) both parse with this crate, so a path
//! or template the compiler accepts is exactly one the runtime accepts, with the same
//! error positions and messages.
//!
//! **An implementation detail of `toolmark`**: depend on `toolmark`, not on this
//! crate. Its version follows `toolmark`'s exactly and its API may change in any
//! release.
//!
//! - [`path`]: sensitive paths, `seg(.seg|[])*` (`cards[].cvc`), and the `json:`
//!   prefix that names JSON properties instead of Rust fields.
//! - [`template`]: summary templates, literal text with `{field}` / `{a.b}`
//!   placeholders (`{{` and `}}` are literal braces).
//! - [`name`]: the name segments of tools and scopes, `[A-Za-z0-9_-]+`.
//!
//! ```
//! use toolmark_syntax::{path, template};
//!
//! let segs = path::parse("cards[].cvc").unwrap();
//! assert_eq!(segs, [path::Seg::key("cards"), path::Seg::Any, path::Seg::key("cvc")]);
//! assert_eq!(path::to_string(&segs), "cards[].cvc");
//!
//! let parts = template::parse("Pay {payee} {amount}").unwrap();
//! assert_eq!(template::fields(&parts).collect::<Vec<_>>(), ["payee", "amount"]);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod name;
pub mod path;
pub mod template;
