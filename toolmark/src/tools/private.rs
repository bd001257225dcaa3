//! What `#[tool]` expansions use. Not a public API: names here may change in any
//! release. Generated code names the runtime only through `::toolmark::__private`.

#![allow(missing_docs, unreachable_pub)]

use std::fmt::Display;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

pub use futures_util::future::BoxFuture;
pub use inventory;
pub use schemars;
pub use serde;
pub use serde_json;

pub use crate::call::input::NoInput;
pub use crate::tools::spec::{Decoded, StateNeed};
pub use crate::{Caller, Effect, Issue, State, ToolContext, ToolError};

/// How many bytes of a tool's run are kept inline, in the call's own future: a
/// run no larger is not allocated (most `#[tool]` fns' runs, before their first
/// await of something large); a larger one is boxed.
pub const RUN_INLINE: usize = 96;

/// A tool's run, not yet polled: inline up to [`RUN_INLINE`] bytes, boxed beyond.
pub type ToolFuture = stackfuture::StackFuture<'static, Result<Value, ToolError>, RUN_INLINE>;

/// `fut` as a [`ToolFuture`]: inline when it fits, else boxed.
///
/// Whether it fits is decided at compile time, and a boxed run is erased to one
/// `dyn` type before it is stored: each tool instantiates `StackFuture`'s
/// functions for its own run only, not a second time for its boxed run (as
/// `StackFuture::from_or_box` does). About 15 fewer functions per tool to compile.
#[inline]
pub fn tool_future<F>(fut: F) -> ToolFuture
where
    F: Future<Output = Result<Value, ToolError>> + Send + 'static,
{
    if const { ToolFuture::has_space_for::<F>() && ToolFuture::has_alignment_for::<F>() } {
        match ToolFuture::try_from(fut) {
            Ok(run) => run,
            Err(_) => checked_at_compile_time(),
        }
    } else {
        boxed_run(Box::pin(fut))
    }
}

/// Not reached (a fn of its own: the panic's formatting is compiled once, not per
/// run type).
#[cold]
fn checked_at_compile_time() -> ! {
    unreachable!("the space and the alignment were checked at compile time")
}

/// A run too large to keep inline, boxed: one `StackFuture` instantiation for all.
fn boxed_run(run: BoxFuture<'static, Result<Value, ToolError>>) -> ToolFuture {
    ToolFuture::from(run)
}

/// Decode the input and build the run in one step.
pub type PrepareFnPtr = fn(&Value, bool, ToolContext) -> Result<ToolFuture, Vec<Issue>>;

/// One `#[tool]` fn, collected with `inventory`.
pub struct ToolRecord {
    pub name: &'static str,
    pub scope: &'static str,
    pub effect: Effect,
    /// Empty: every caller.
    pub callers: &'static [Caller],
    pub description: &'static str,
    pub title: Option<&'static str>,
    /// Rust field paths (`cards[].cvc`), or JSON names after `json:`.
    pub sensitive: &'static [&'static str],
    pub summary: Option<&'static str>,
    pub timeout_ms: Option<u64>,
    /// `open_world` (`Some(true)`) or `closed_world` (`Some(false)`); `None`: the
    /// effect's default.
    pub open_world: Option<bool>,
    /// `idempotent` (`Some(true)`); `None`: the effect's default.
    pub idempotent: Option<bool>,
    /// The fn takes a `ToolContext` or a `State<T>` (otherwise a call needs no
    /// context of its own).
    pub uses_context: bool,
    pub states: fn() -> Vec<StateNeed>,
    pub input_schema: fn() -> Value,
    pub output_schema: fn() -> Option<Value>,
    pub decode: fn(&Value, bool) -> Result<Decoded, Vec<Issue>>,
    pub run: fn(ToolContext, Decoded) -> ToolFuture,
    /// Decode and build the run in one step.
    pub prepare: PrepareFnPtr,
    pub module_path: &'static str,
    pub file: &'static str,
    pub line: u32,
    /// Filled on first use: the input schema is computed once per process. A
    /// reference to a `static` the expansion declares: `inventory::submit!` borrows
    /// the record as a temporary, which may not hold a `OnceLock` itself (E0492).
    pub schema_cache: &'static OnceLock<Arc<Value>>,
    pub output_cache: &'static OnceLock<Option<Arc<Value>>>,
}

inventory::collect!(ToolRecord);

impl ToolRecord {
    pub(crate) fn input_schema(&self) -> Arc<Value> {
        Arc::clone(
            self.schema_cache
                .get_or_init(|| Arc::new((self.input_schema)())),
        )
    }

    pub(crate) fn output_schema(&self) -> Option<Arc<Value>> {
        self.output_cache
            .get_or_init(|| (self.output_schema)().map(Arc::new))
            .clone()
    }

    pub(crate) fn to_spec(&'static self) -> crate::ToolSpec {
        let decode = self.decode;
        let run = self.run;
        let prepare = self.prepare;
        let mut spec = crate::ToolSpec::raw(
            self.name.to_owned(),
            self.description.to_owned(),
            Arc::new(move |v: &Value, allow: bool| decode(v, allow)),
            Arc::new(move |ctx, d| Box::pin(run(ctx, d))),
            self.input_schema(),
            Some(Arc::new(move |v: &Value, allow: bool, ctx| {
                prepare(v, allow, ctx)
            })),
        );
        spec.output_schema = self.output_schema();
        spec.effect = self.effect;
        if !self.callers.is_empty() {
            spec.callers = self.callers.iter().copied().collect();
        }
        spec.title = self.title.map(str::to_owned);
        spec.open_world = self.open_world;
        spec.idempotent = self.idempotent;
        spec.sensitive = crate::tools::spec::SensitiveSource::Static {
            paths: self.sensitive.iter().map(|s| (*s).to_owned()).collect(),
            rust_names: true,
        };
        spec.summary = self.summary.map(str::to_owned);
        spec.rust_names = true;
        spec.uses_context = self.uses_context;
        spec.timeout = self.timeout_ms.map(std::time::Duration::from_millis);
        spec.states = (self.states)();
        spec
    }
}

/// A run that fails with `err` before it starts (one future type for every tool).
pub fn failed(err: ToolError) -> ToolFuture {
    tool_future(std::future::ready(Err(err)))
}

/// The state needs of a tool that takes no `State<T>`.
pub fn no_states() -> Vec<StateNeed> {
    Vec::new()
}

/// A tool's plain output as JSON.
pub fn output<T: Serialize>(value: T) -> Result<Value, ToolError> {
    crate::call::input::output_to_value(&value)
}

/// Error conversion: `ToolError` is kept as is (with its issues), any other
/// `E: Display` becomes a `ToolError` with its message.
pub struct ErrWrap<E>(pub E);

impl ErrWrap<ToolError> {
    pub fn into_tool_error(self) -> ToolError {
        self.0
    }
}

pub trait DisplayErr {
    fn into_tool_error(self) -> ToolError;
}

impl<E: Display> DisplayErr for ErrWrap<E> {
    fn into_tool_error(self) -> ToolError {
        ToolError::new(self.0.to_string())
    }
}

/// A `Result` output: `Ok` serialized, `Err` converted.
pub fn output_result<T: Serialize>(value: Result<T, ToolError>) -> Result<Value, ToolError> {
    value.and_then(|v| crate::call::input::output_to_value(&v))
}

/// Output schema, when the output type has one (autoref specialization: the
/// inherent method wins when `T: JsonSchema`).
pub struct OutputSchema<T: ?Sized>(PhantomData<T>);

impl<T: ?Sized> OutputSchema<T> {
    pub const fn new() -> Self {
        OutputSchema(PhantomData)
    }
}

impl<T: ?Sized> Default for OutputSchema<T> {
    fn default() -> Self {
        Self::new()
    }
}

pub trait NoOutputSchema {
    fn output_schema(&self) -> Option<Value>;
}

impl<T: ?Sized> NoOutputSchema for &OutputSchema<T> {
    fn output_schema(&self) -> Option<Value> {
        None
    }
}

impl<T: schemars::JsonSchema> OutputSchema<T> {
    pub fn output_schema(&self) -> Option<Value> {
        Some(crate::call::input::schema_for::<T>())
    }
}

/// Extract a `State<T>` (registration checked it exists).
pub fn state<T: Send + Sync + 'static>(ctx: &ToolContext) -> Result<State<T>, ToolError> {
    ctx.state::<T>().map(State).ok_or_else(|| {
        ToolError::new(format!(
            "internal error: no state of type `{}` was given to the builder",
            std::any::type_name::<T>()
        ))
    })
}

/// What a sync tool's thread takes from its run (taken before the context is
/// moved into the tool fn or released).
pub struct SyncRun(crate::call::current::SyncInherit);

/// Snapshot of the run `ctx` belongs to, for [`run_blocking`].
pub fn sync_run(ctx: &ToolContext) -> SyncRun {
    SyncRun(crate::call::current::sync_inherit(ctx))
}

/// Run a sync tool fn on a thread of its own (never one the runtime waits for at
/// shutdown). A panic in it is resumed on the awaiting task, where the runtime
/// turns it into an `error` outcome.
pub fn run_blocking<F, R>(run: SyncRun, f: F) -> impl Future<Output = R> + Send
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    crate::call::sync_run::run_blocking(run.0, f)
}

pin_project_lite::pin_project! {
    /// The run of a `#[tool]` async fn: its future, then `finish` on what it
    /// returns. A plain generic future (no `async` block is compiled per tool, and
    /// none here either). `A` names the tool's input as the expansion checked it
    /// (the checked input type, or the tuple of the checked argument types): when a
    /// check failed it is an error type, and the `Send` requirement on the run,
    /// which names `A`, reports nothing more.
    pub struct Run<F: Future, A> {
        #[pin]
        run: F,
        finish: fn(F::Output) -> Result<Value, ToolError>,
        input: PhantomData<fn() -> A>,
    }
}

impl<F: Future, A> Run<F, A> {
    pub fn new(run: F, finish: fn(F::Output) -> Result<Value, ToolError>) -> Self {
        Run {
            run,
            finish,
            input: PhantomData,
        }
    }
}

impl<F: Future, A> Future for Run<F, A> {
    type Output = Result<Value, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let out = std::task::ready!(this.run.poll(cx));
        Poll::Ready((this.finish)(out))
    }
}

/// A `#[tool]` async fn's run, inline when it fits (see [`ToolFuture`]). The
/// `Send` bound is where a tool whose future is not `Send` is reported (at the
/// tool's fn name).
pub fn run_async<F, A>(run: Run<F, A>) -> ToolFuture
where
    F: Future,
    Run<F, A>: Send + 'static,
{
    tool_future(run)
}

/// The run of a sync `#[tool]` fn that takes no `ToolContext`: on a thread of its
/// own, with what it inherits from the run taken at its first poll (the context is
/// released on the task, before the fn starts).
pub fn run_sync<F, R, C>(ctx: ToolContext, f: F, finish: C) -> ToolFuture
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
    C: FnOnce(R) -> Result<Value, ToolError> + Send + 'static,
{
    tool_future(async move {
        let sync = sync_run(&ctx);
        drop(ctx);
        finish(run_blocking(sync, f).await)
    })
}

/// The run of a sync `#[tool]` fn that takes its `ToolContext`.
pub fn run_sync_with_context<F, R, C>(ctx: ToolContext, f: F, finish: C) -> ToolFuture
where
    F: FnOnce(ToolContext) -> R + Send + 'static,
    R: Send + 'static,
    C: FnOnce(R) -> Result<Value, ToolError> + Send + 'static,
{
    tool_future(async move {
        let sync = sync_run(&ctx);
        finish(run_blocking(sync, move || f(ctx)).await)
    })
}

/// The error conversion of a `#[tool]` fn returning `Result<T, E>` with `E` written,
/// picked by autoref at the expansion: `ErrOf::<E>::new().conv()` is [`KeepErr`]
/// for `ToolError` (inherent, wins), [`ShowErr`] for any other `E: Display`
/// ([`DisplayConv`]), else [`NameErr`] ([`AnyConv`], through autoref: only when `E` is
/// not `Display`, which [`ToolErrorType`] reports; a program using it does not
/// compile). What it picks is a type, so [`result_finish`] is one fn per `(T, E)`,
/// shared by every tool of that output, not a closure per tool.
pub struct ErrOf<E>(PhantomData<fn() -> E>);

impl<E> ErrOf<E> {
    pub const fn new() -> Self {
        ErrOf(PhantomData)
    }
}

impl<E> Default for ErrOf<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl ErrOf<ToolError> {
    pub fn conv(self) -> KeepErr {
        KeepErr
    }
}

pub trait DisplayConv {
    fn conv(self) -> ShowErr;
}

impl<E: Display> DisplayConv for ErrOf<E> {
    fn conv(self) -> ShowErr {
        ShowErr
    }
}

pub trait AnyConv {
    fn conv(&self) -> NameErr;
}

impl<E> AnyConv for ErrOf<E> {
    fn conv(&self) -> NameErr {
        NameErr
    }
}

/// A `ToolError` kept as is (with its issues).
pub struct KeepErr;
/// An `E: Display` as a `ToolError` with its message.
pub struct ShowErr;
/// Last resort (see [`ErrOf`]).
pub struct NameErr;

/// An error conversion picked by [`ErrOf`].
pub trait ConvErr<E> {
    fn conv_err(err: E) -> ToolError;
}

impl ConvErr<ToolError> for KeepErr {
    fn conv_err(err: ToolError) -> ToolError {
        err
    }
}

impl<E: Display> ConvErr<E> for ShowErr {
    fn conv_err(err: E) -> ToolError {
        ToolError::new(err.to_string())
    }
}

impl<E> ConvErr<E> for NameErr {
    fn conv_err(_: E) -> ToolError {
        ToolError::new(std::any::type_name::<E>())
    }
}

/// The finish of a `#[tool]` fn returning `Result<T, E>`: `Ok` serialized, `Err`
/// converted by `C` (what [`ErrOf`] picked for `E`).
pub fn result_finish<T: Serialize, E, C: ConvErr<E>>(
    _: C,
) -> fn(Result<T, E>) -> Result<Value, ToolError> {
    finish_result::<T, E, C>
}

fn finish_result<T: Serialize, E, C: ConvErr<E>>(out: Result<T, E>) -> Result<Value, ToolError> {
    match out {
        Ok(value) => output(value),
        Err(err) => Err(C::conv_err(err)),
    }
}

/// The result of a tool fn returning `()`.
pub fn unit_output(_: ()) -> Result<Value, ToolError> {
    output(())
}

/// Compile-time check of sensitive paths: `Option` is transparent.
pub struct Peel<'a, T: ?Sized>(pub &'a T);

impl<'a, T> Peel<'a, Option<T>> {
    pub fn peel(&self) -> Option<&'a T> {
        self.0.as_ref()
    }
}

pub trait PeelAny<'a, T: ?Sized> {
    fn peel(&self) -> Option<&'a T>;
}

impl<'a, T: ?Sized> PeelAny<'a, T> for Peel<'a, T> {
    fn peel(&self) -> Option<&'a T> {
        Some(self.0)
    }
}

/// Compile-time check of `[]` in a sensitive path: the field must be a sequence (its
/// items are its elements) or a map (its items are its values; the keys are secrets
/// too, which the runtime handles).
#[diagnostic::on_unimplemented(
    message = "`[]` in a sensitive path needs a sequence or a map, but `{Self}` is neither",
    label = "`[]` follows a field that is not a Vec, slice, array, set or map",
    note = "`[]` steps into each element of a Vec, VecDeque, slice, array or set, and into each value of a HashMap, BTreeMap or serde_json::Map; remove it for a plain field"
)]
pub trait SequenceOrMap {
    type Item;
    fn sensitive_items(&self) -> impl Iterator<Item = &Self::Item>;
}

impl<T> SequenceOrMap for Vec<T> {
    type Item = T;
    fn sensitive_items(&self) -> impl Iterator<Item = &T> {
        self.iter()
    }
}

impl<T> SequenceOrMap for [T] {
    type Item = T;
    fn sensitive_items(&self) -> impl Iterator<Item = &T> {
        self.iter()
    }
}

impl<T, const N: usize> SequenceOrMap for [T; N] {
    type Item = T;
    fn sensitive_items(&self) -> impl Iterator<Item = &T> {
        self.iter()
    }
}

impl<T> SequenceOrMap for std::collections::VecDeque<T> {
    type Item = T;
    fn sensitive_items(&self) -> impl Iterator<Item = &T> {
        self.iter()
    }
}

impl<T, S> SequenceOrMap for std::collections::HashSet<T, S> {
    type Item = T;
    fn sensitive_items(&self) -> impl Iterator<Item = &T> {
        self.iter()
    }
}

impl<T> SequenceOrMap for std::collections::BTreeSet<T> {
    type Item = T;
    fn sensitive_items(&self) -> impl Iterator<Item = &T> {
        self.iter()
    }
}

impl<K, V, S> SequenceOrMap for std::collections::HashMap<K, V, S> {
    type Item = V;
    fn sensitive_items(&self) -> impl Iterator<Item = &V> {
        self.values()
    }
}

impl<K, V> SequenceOrMap for std::collections::BTreeMap<K, V> {
    type Item = V;
    fn sensitive_items(&self) -> impl Iterator<Item = &V> {
        self.values()
    }
}

impl SequenceOrMap for serde_json::Map<String, Value> {
    type Item = Value;
    fn sensitive_items(&self) -> impl Iterator<Item = &Value> {
        self.values()
    }
}

impl<T: SequenceOrMap + ?Sized> SequenceOrMap for Box<T> {
    type Item = T::Item;
    fn sensitive_items(&self) -> impl Iterator<Item = &T::Item> {
        (**self).sensitive_items()
    }
}

// The checks below are traits with an associated `OK` constant and one blanket
// impl marked `do_not_recommend`: the expansion reads `<T as Check>::OK` spanned at
// the user's type, so a missing derive is one error at that type, with the trait's
// message and no note pointing into this file. That read sits in a const argument
// of [`Checked`]: when it fails, the type that names it is an error type, and the
// derives and fns using it report nothing more. The traits are also re-exported
// (hidden) at the crate root, so rustc names them `ToolInputDecode`, not by their
// path through this module.

/// `<T as Checked<A, B, C>>::Ty` is `T`, once the checks `A`, `B`, `C` (reads of
/// `OK` constants) compile.
pub trait Checked<const A: usize, const B: usize, const C: usize> {
    type Ty: ?Sized;
}

impl<T: ?Sized, const A: usize, const B: usize, const C: usize> Checked<A, B, C> for T {
    type Ty = T;
}

/// What a `#[tool]` input type must implement to be described: schemars 1's
/// `JsonSchema`. One trait per requirement, so the error names the one missing.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool input: it does not implement `schemars::JsonSchema` from schemars 1.x",
    label = "this input type needs `#[derive(schemars::JsonSchema)]` (schemars 1.x)",
    note = "add `#[derive(serde::Deserialize, schemars::JsonSchema)]` to `{Self}`, with `schemars = \"1\"` in Cargo.toml: a type deriving the `JsonSchema` of schemars 0.8 does not count (or make this parameter a `State<T>` / `ToolContext`)"
)]
pub trait ToolInputSchema {
    const OK: usize = 0;
}

#[diagnostic::do_not_recommend]
impl<T: schemars::JsonSchema + ?Sized> ToolInputSchema for T {}

/// What a `#[tool]` input type must implement to be read from JSON.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool input: it does not implement `serde::Deserialize`",
    label = "this input type needs `#[derive(serde::Deserialize)]` (owning its data: no borrowed fields)",
    note = "add `#[derive(serde::Deserialize, schemars::JsonSchema)]` to `{Self}` (or make this parameter a `State<T>` / `ToolContext`)"
)]
pub trait ToolInputDecode {
    const OK: usize = 0;
}

#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned> ToolInputDecode for T {}

/// What a `#[tool]` input type must be to cross threads with its run.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool input: it is not `Send`",
    label = "a tool's input moves into its run, which may go to another thread",
    note = "use `Arc` instead of `Rc`, and `Mutex` instead of `RefCell`, inside `{Self}`"
)]
pub trait ToolInputSend {
    const OK: usize = 0;
}

#[diagnostic::do_not_recommend]
impl<T: Send + ?Sized> ToolInputSend for T {}

/// What the type of a plain argument (`#[arg]` or not) must implement to be
/// described: schemars 1's `JsonSchema`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: it does not implement `schemars::JsonSchema` from schemars 1.x",
    label = "this argument's type needs `#[derive(schemars::JsonSchema)]` (schemars 1.x)",
    note = "add `#[derive(serde::Deserialize, schemars::JsonSchema)]` to your type (for an `Option<T>`, `Vec<T>`, …: to `T`), with `schemars = \"1\"` in Cargo.toml: a type deriving the `JsonSchema` of schemars 0.8 does not count"
)]
pub trait ToolArgSchema {
    const OK: usize = 0;
}

#[diagnostic::do_not_recommend]
impl<T: schemars::JsonSchema + ?Sized> ToolArgSchema for T {}

/// What the type of a plain argument must implement to be read from JSON.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: it does not implement `serde::Deserialize`",
    label = "this argument's type needs `#[derive(serde::Deserialize)]` (owning its data: no borrowed fields)",
    note = "add `#[derive(serde::Deserialize, schemars::JsonSchema)]` to your type (for an `Option<T>`, `Vec<T>`, …: to `T`), or make this parameter a `State<T>` / `ToolContext`"
)]
pub trait ToolArgDecode {
    const OK: usize = 0;
}

#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned> ToolArgDecode for T {}

/// What the type of a plain argument must be to cross threads with its run.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: it is not `Send`",
    label = "a tool's arguments move into its run, which may go to another thread",
    note = "use `Arc` instead of `Rc`, and `Mutex` instead of `RefCell`"
)]
pub trait ToolArgSend {
    const OK: usize = 0;
}

#[diagnostic::do_not_recommend]
impl<T: Send + ?Sized> ToolArgSend for T {}

/// What a `#[tool]` output type must implement.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool output: it does not implement `serde::Serialize`",
    label = "a tool's output must implement `serde::Serialize`",
    note = "add `#[derive(serde::Serialize)]` to `{Self}`"
)]
pub trait ToolOutput {
    const OK: usize = 0;
}

#[diagnostic::do_not_recommend]
impl<T: Serialize + ?Sized> ToolOutput for T {}

/// What the error type of a `#[tool]` fn returning `Result<T, E>` must implement.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool error: it does not implement `std::fmt::Display`",
    label = "a tool's error type must implement `std::fmt::Display` (or be `ToolError`)",
    note = "return `Result<T, ToolError>`, `anyhow::Result<T>`, or implement `Display` for `{Self}`"
)]
pub trait ToolErrorType {
    const OK: usize = 0;
}

#[diagnostic::do_not_recommend]
impl<E: Display + ?Sized> ToolErrorType for E {}

/// A tool record's input functions for the input type `T` (the runtime's own
/// generic fns, named here so that no wrapper is compiled per tool).
pub struct InputFns<T> {
    pub decode: fn(&Value, bool) -> Result<Decoded, Vec<Issue>>,
    pub schema: fn() -> Value,
    pub input: PhantomData<fn() -> T>,
}

/// The input functions of `T`. The expansion names `T` through [`Checked`] with the
/// reads of [`ToolInputSchema`], [`ToolInputDecode`] and [`ToolInputSend`], so an
/// input type without a derive is reported once per missing derive, by those traits.
pub const fn input_fns<T: schemars::JsonSchema + DeserializeOwned + Send + 'static>() -> InputFns<T>
{
    InputFns {
        decode: crate::call::input::decode::<T>,
        schema: crate::call::input::schema_for::<T>,
        input: PhantomData,
    }
}

/// A `#[tool]` fn's start: the expansion's `__toolmark_start`, named by a type of
/// the expansion's own, so that the record's run and prepare are the generic
/// [`run_decoded`] and [`prepare_input`] (written, type checked and borrow checked
/// once here) rather than two fns written per tool.
pub trait ToolStart {
    type Input: 'static;
    const START: fn(ToolContext, Self::Input) -> ToolFuture;
}

/// The record's `run`: the decoded input taken back, then the start. The slot is
/// read here rather than through `call::input::take` (whose `Result` would be one
/// more fn, and its matching more code, compiled per tool).
pub fn run_decoded<S: ToolStart>(ctx: ToolContext, mut decoded: Decoded) -> ToolFuture {
    if let Some(slot) = decoded.downcast_mut::<Option<S::Input>>()
        && let Some(input) = slot.take()
    {
        return (S::START)(ctx, input);
    }
    not_the_input(std::any::type_name::<S::Input>())
}

/// The run of a decoded value that is not the tool's input (not reached: the
/// record's decode made it).
#[cold]
fn not_the_input(type_name: &'static str) -> ToolFuture {
    failed(crate::call::input::not_the_input(type_name))
}

/// The record's `prepare`: decode and start in one step.
pub fn prepare_input<S: ToolStart>(
    input: &Value,
    allow_unknown: bool,
    ctx: ToolContext,
) -> Result<ToolFuture, Vec<Issue>>
where
    S::Input: DeserializeOwned,
{
    match crate::call::input::decode_typed::<S::Input>(input, allow_unknown) {
        Ok(input) => Ok((S::START)(ctx, input)),
        Err(issues) => Err(issues),
    }
}

/// The output conversion of `T` (named through [`Checked`] with [`ToolOutput`]'s read,
/// so an output type without `Serialize` is reported once, by that trait).
pub const fn output_fn<T: Serialize>() -> fn(T) -> Result<Value, ToolError> {
    output::<T>
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hint::black_box;

    async fn answer(bytes: usize) -> Result<Value, ToolError> {
        Ok(Value::from(bytes))
    }

    /// A run that fits is kept inline, one that does not is boxed: both run to the
    /// end, and a run dropped before it ends drops what it holds.
    #[tokio::test]
    async fn a_run_inline_or_boxed_runs_and_drops() {
        let small = async {
            let held = [7u8; 16];
            answer(black_box(held).len()).await
        };
        assert!(ToolFuture::has_space_for_val(&small));
        assert_eq!(tool_future(small).await.unwrap(), Value::from(16));

        let large = async {
            let held = [7u8; 4 * RUN_INLINE];
            answer(black_box(held).len()).await
        };
        assert!(!ToolFuture::has_space_for_val(&large));
        assert_eq!(
            tool_future(large).await.unwrap(),
            Value::from(4 * RUN_INLINE)
        );

        let dropped = Arc::new(());
        let (inline, boxed) = (Arc::clone(&dropped), Arc::clone(&dropped));
        let never = |held: Arc<()>| async move {
            std::future::pending::<()>().await;
            drop(held);
            answer(0).await
        };
        drop(tool_future(never(inline)));
        let big = async move {
            let pad = [0u8; 4 * RUN_INLINE];
            std::future::pending::<()>().await;
            drop(boxed);
            answer(black_box(pad).len()).await
        };
        drop(tool_future(big));
        assert_eq!(Arc::strong_count(&dropped), 1);
    }
}
