//! Helpers for tests: [`test_toolmark`] and a [`ToolContext`] for calling a tool fn
//! directly.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::call::context::{CallShared, Deadline, Origin, Reach, Signal, StateMap};
use crate::{Caller, CallerClient, Decision, LogMessage, ToolContext, Toolmark, ToolmarkBuilder};

/// A toolmark for tests: the production confirmation modes (inapp deferred, test
/// inline, …) plus an inline confirm handler that approves every request.
///
/// ```
/// let tm = toolmark::testing::test_toolmark();
/// # let _ = tm;
/// ```
pub fn test_toolmark() -> Toolmark {
    match test_toolmark_builder().build() {
        Ok(tm) => tm,
        // The defaults are always valid.
        Err(e) => unreachable!("test_toolmark defaults are valid: {e}"),
    }
}

/// The builder behind [`test_toolmark`]: set its clock, state and options, or
/// replace the approving handler with `confirm_handler(..)`.
///
/// ```
/// use toolmark::clock::ManualClock;
///
/// let clock = ManualClock::new();
/// let tm = toolmark::testing::test_toolmark_builder()
///     .clock(clock.clone())
///     .build()
///     .unwrap();
/// # let _ = tm;
/// ```
pub fn test_toolmark_builder() -> ToolmarkBuilder {
    Toolmark::builder().confirm_handler(|_req| async { Decision::approve() })
}

/// Builds a [`ToolContext`] for calling a `#[tool]` fn directly in a unit test.
///
/// ```
/// use toolmark::{testing, Caller};
///
/// let ctx = testing::context(Caller::Test).tool_name("math.add").state(41_u32).build();
/// assert_eq!(ctx.caller(), Caller::Test);
/// assert_eq!(*ctx.state::<u32>().unwrap(), 41);
/// ```
///
/// Its `confirm` approves for [`Caller::Human`] and answers
/// `confirmation_unavailable` otherwise; `on_undo` keeps nothing; `log` goes to
/// [`TestContext::on_log`] (else `tracing`); `elicit` and `sample` ask
/// [`TestContext::client`] (else `not_supported`).
pub fn context(caller: Caller) -> TestContext {
    TestContext {
        caller,
        tool: "test".to_owned(),
        states: StateMap::default(),
        signal: CancellationToken::new(),
        reach: None,
        scopes: None,
    }
}

/// A [`ToolContext`] under construction; see [`context`].
pub struct TestContext {
    caller: Caller,
    tool: String,
    states: StateMap,
    signal: CancellationToken,
    reach: Option<Reach>,
    scopes: Option<std::sync::Weak<crate::toolmark::Inner>>,
}

impl std::fmt::Debug for TestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestContext")
            .field("caller", &self.caller)
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

impl TestContext {
    /// The tool name the context reports.
    #[must_use]
    pub fn tool_name(mut self, name: impl Into<String>) -> Self {
        self.tool = name.into();
        self
    }

    /// A state for `ctx.state::<T>()` and `State<T>`.
    #[must_use]
    pub fn state<T: Send + Sync + 'static>(mut self, state: T) -> Self {
        self.states.insert(state);
        self
    }

    /// The signal the context hands out.
    #[must_use]
    pub fn signal(mut self, token: CancellationToken) -> Self {
        self.signal = token;
        self
    }

    /// Receive the context's `ctx.log` messages.
    #[must_use]
    pub fn on_log(mut self, f: impl Fn(LogMessage) + Send + Sync + 'static) -> Self {
        self.reach.get_or_insert_with(Reach::default).log = Some(Arc::new(f));
        self
    }

    /// The client `ctx.elicit` and `ctx.sample` ask (a stub of your own).
    #[must_use]
    pub fn client(mut self, client: impl CallerClient) -> Self {
        self.reach.get_or_insert_with(Reach::default).client = Some(Arc::new(client));
        self
    }

    /// The toolmark whose scopes `ctx.scope_at` reaches (without one it returns
    /// `None`).
    #[must_use]
    pub fn toolmark(mut self, tm: &Toolmark) -> Self {
        self.scopes = Some(Arc::downgrade(&tm.inner));
        self
    }

    /// The context.
    pub fn build(self) -> ToolContext {
        ToolContext {
            call: Arc::new(CallShared {
                caller: self.caller,
                origin: Origin::Test {
                    tool: Arc::from(self.tool),
                    states: self.states,
                    scopes: self.scopes,
                },
                signal: Signal::new(Some(self.signal)),
                input: Value::Null,
                deadline: Deadline::new(None),
                progress: None,
                reach: self.reach.map(Arc::new),
            }),
        }
    }
}
