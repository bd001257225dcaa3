//! The code `#[tool]` generates compiles clean under strict lints: rustc's warnings,
//! `unused_qualifications` and clippy's pedantic group (CI runs clippy with
//! `-D warnings` over all targets).

#![deny(warnings, unused_qualifications)]
#![deny(clippy::pedantic)]

/// Tools covering every form of the expansion.
mod tools {
    use std::collections::{BTreeMap, HashMap};
    use std::sync::{Arc, OnceLock};
    use std::vec::Vec;

    use serde::{Deserialize, Serialize};
    use serde_json::Value;
    use toolmark::{tool, State, ToolContext, ToolError};

    /// A card.
    #[derive(Deserialize, schemars::JsonSchema)]
    pub(crate) struct Card {
        /// The number.
        pub(crate) number: String,
        /// The security code.
        pub(crate) cvc: Option<String>,
    }

    /// A new challenge.
    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct NewChallenge {
        /// The title.
        pub(crate) title: String,
        /// The cards.
        pub(crate) cards: Vec<Card>,
        /// A renamed field.
        #[serde(rename = "Pin")]
        pub(crate) pin_code: Option<String>,
        /// Optional cards.
        pub(crate) spare_cards: Option<Vec<Option<Card>>>,
    }

    /// What a tool returns.
    #[derive(Serialize, schemars::JsonSchema)]
    pub(crate) struct Created {
        /// The id.
        pub(crate) id: u64,
    }

    /// Not a JSON schema.
    #[derive(Serialize)]
    pub(crate) struct Plain {
        /// A value.
        pub(crate) value: Value,
    }

    /// App state.
    pub(crate) struct Db {
        /// A counter.
        pub(crate) next: u64,
    }

    /// A cache, to make sure `OnceLock` and `Arc` imports do not clash.
    pub(crate) static CACHE: OnceLock<Arc<Value>> = OnceLock::new();

    /// Create a challenge.
    #[tool(
        scope = "lints.challenges",
        consequential,
        sensitive = ["cards[].cvc", "json:Pin", "spare_cards"],
        sensitive = "spare_cards[].cvc",
        summary = "Create {title} ({cards.0.number})",
        callers = [inapp, mcp, human],
        title = "Create",
        timeout = "30s"
    )]
    pub(crate) async fn create(
        input: NewChallenge,
        ctx: ToolContext,
        db: State<Db>,
    ) -> Result<Created, ToolError> {
        let _ = (ctx.caller(), input.title, input.cards.len(), input.pin_code);
        tokio::task::yield_now().await;
        Ok(Created { id: db.next })
    }

    /// Add two numbers.
    #[tool(scope = "lints", read_only)]
    pub(crate) fn add(#[arg(description = "The first term")] a: i64, b: Option<i64>) -> i64 {
        a + b.unwrap_or_default()
    }

    /// Every plain type.
    #[tool(scope = "lints", sensitive = ["secrets[]", "card.cvc"], summary = "{name}")]
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn many(
        name: String,
        flags: Vec<bool>,
        secrets: Vec<String>,
        counts: HashMap<String, u32>,
        sorted: BTreeMap<String, f64>,
        pair: (u8, char),
        grid: [i16; 2],
        #[arg] card: Card,
    ) -> anyhow::Result<usize> {
        tokio::task::yield_now().await;
        Ok(name.len()
            + flags.len()
            + secrets.len()
            + counts.len()
            + sorted.len()
            + usize::from(pair.0)
            + grid.len()
            + card.number.len())
    }

    /// Nothing in, nothing out.
    #[tool(scope = "lints", destructive)]
    pub(crate) async fn reset(db: State<Db>) {
        let _ = db.next;
        tokio::task::yield_now().await;
    }

    /// A sync fn without an output schema.
    #[tool(scope = "lints", name = "plain-out")]
    #[must_use]
    pub(crate) fn plain_out() -> Plain {
        Plain { value: Value::Null }
    }

    /// A sync fn with a state and a `Result`.
    #[tool(scope = "lints", read_only)]
    pub(crate) fn lookup(db: State<Db>, key: String) -> Result<u64, ToolError> {
        if key.is_empty() {
            return Err(ToolError::new("empty key"));
        }
        Ok(db.next)
    }

    /// A `Display` error.
    #[tool(scope = "lints")]
    pub(crate) async fn fails(ctx: ToolContext) -> Result<(), std::fmt::Error> {
        let _ = ctx;
        tokio::task::yield_now().await;
        Err(std::fmt::Error)
    }
}

#[test]
fn lint_clean_tools_are_collected() {
    let tm = toolmark::testing::test_toolmark_builder()
        .state(tools::Db { next: 1 })
        .build()
        .unwrap();
    let n = tm
        .register_collected_where(|c| c.module_path.ends_with("macro_lints::tools"))
        .unwrap();
    assert_eq!(n, 7);
    assert!(tools::CACHE.get().is_none());
}
