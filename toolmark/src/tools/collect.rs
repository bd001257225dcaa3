//! Registering every `#[tool]` fn the binary links: [`Toolmark::register_collected`].
//!
//! Tools are collected with `inventory`. A tool defined in a crate the binary never
//! references is not linked, and so not collected: reference something from that
//! crate (or call its own registration function) to bring its tools in.

use crate::tools::private::ToolRecord;
use crate::{CollectError, Toolmark};

/// A collected `#[tool]` fn, as [`Toolmark::register_collected_where`] shows it.
#[derive(Clone, Copy, Debug)]
pub struct Collected {
    /// The tool name.
    pub name: &'static str,
    /// The `scope = "…"` path (`""` for none).
    pub scope: &'static str,
    /// The module that defines it (`module_path!()`).
    pub module_path: &'static str,
    /// The source file.
    pub file: &'static str,
    /// The line.
    pub line: u32,
}

impl Collected {
    /// The full name: scope path and name joined by `.`.
    pub fn full_name(&self) -> String {
        if self.scope.is_empty() {
            self.name.to_owned()
        } else {
            format!("{}.{}", self.scope, self.name)
        }
    }
}

fn view(r: &ToolRecord) -> Collected {
    Collected {
        name: r.name,
        scope: r.scope,
        module_path: r.module_path,
        file: r.file,
        line: r.line,
    }
}

impl Toolmark {
    /// Register every `#[tool]` fn in the binary, creating the scopes their
    /// `scope = "…"` paths name (get them with [`scope_at`](Self::scope_at)).
    /// Every record is checked; if any fails, nothing is registered and every error
    /// is reported. Returns how many tools were registered.
    pub fn register_collected(&self) -> Result<usize, CollectError> {
        self.register_collected_where(|_| true)
    }

    /// [`register_collected`](Self::register_collected) for the tools `filter`
    /// selects (tests use it to keep fixtures apart, e.g. by `module_path`).
    pub fn register_collected_where(
        &self,
        filter: impl Fn(&Collected) -> bool,
    ) -> Result<usize, CollectError> {
        let mut records: Vec<&'static ToolRecord> = inventory::iter::<ToolRecord>
            .into_iter()
            .filter(|r| filter(&view(r)))
            .collect();
        records.sort_by_key(|r| (r.scope, r.name, r.file, r.line));
        let specs = records
            .into_iter()
            .map(|r| (r.to_spec(), self.scope_at(r.scope)))
            .collect();
        self.inner.register_all(specs)
    }

    /// Every collected `#[tool]` fn in the binary (registered or not).
    pub fn collected() -> Vec<Collected> {
        inventory::iter::<ToolRecord>
            .into_iter()
            .map(view)
            .collect()
    }
}
