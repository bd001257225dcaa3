#!/usr/bin/env bash
# Compile time of 200 tools: a crate of 200 `#[tool]` fns against a hand-written
# control (the same 200 input structs with serde + schemars derives and 200
# `ToolSpec::typed` registrations), and with `--rmcp` a crate of the same 200 tools
# on rmcp's `#[tool_router]`. Each crate is built once to prebuild its dependencies,
# then its own code is rebuilt (debug, non-incremental) and timed: median of 3.
#
# Usage: benches/compile_time.sh [--rmcp] [N]      (N tools, default 200)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
with_rmcp=0
n=200
for arg in "$@"; do
  case "$arg" in
    --rmcp) with_rmcp=1 ;;
    *) n=$arg ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="$work/target" CARGO_INCREMENTAL=0

manifest() { # name, extra dependencies
  cat <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2021"
publish = false
[workspace]
[dependencies]
serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = "1"
tokio = { version = "1", features = ["rt", "macros"] }
$2
TOML
}

gen_macro() {
  mkdir -p "$work/macro/src"
  manifest tm_macro "toolmark = { path = \"$root/toolmark\" }" > "$work/macro/Cargo.toml"
  {
    echo 'use toolmark::{tool, ToolError};'
    for i in $(seq 1 "$n"); do
      cat <<RS
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct In$i { pub name: String, pub count: u32, pub tags: Vec<String> }
/// Tool $i.
#[tool(scope = "s$((i % 10))")]
pub async fn tool_$i(input: In$i) -> Result<String, ToolError> { Ok(format!("{} {}", input.name, input.count + input.tags.len() as u32)) }
RS
    done
  } > "$work/macro/src/lib.rs"
}

gen_control() {
  mkdir -p "$work/control/src"
  manifest tm_control "toolmark = { path = \"$root/toolmark\" }" > "$work/control/Cargo.toml"
  {
    echo 'use toolmark::{ToolError, ToolSpec, Toolmark};'
    for i in $(seq 1 "$n"); do
      cat <<RS
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct In$i { pub name: String, pub count: u32, pub tags: Vec<String> }
RS
    done
    echo 'pub fn register(tm: &Toolmark) {'
    for i in $(seq 1 "$n"); do
      echo "    tm.scope(\"s$((i % 10))\").register(ToolSpec::typed(\"tool_$i\", \"Tool $i.\", |_ctx, input: In$i| async move { Ok::<_, ToolError>(format!(\"{} {}\", input.name, input.count + input.tags.len() as u32)) })).unwrap();"
    done
    echo '}'
  } > "$work/control/src/lib.rs"
}

gen_rmcp() {
  mkdir -p "$work/rmcp/src"
  manifest tm_rmcp 'rmcp = { version = "3.11", features = ["server", "macros"] }' > "$work/rmcp/Cargo.toml"
  {
    echo 'use rmcp::{handler::server::wrapper::Parameters, tool, tool_router, handler::server::router::tool::ToolRouter};'
    for i in $(seq 1 "$n"); do
      echo "#[derive(serde::Deserialize, schemars::JsonSchema)] pub struct In$i { pub name: String, pub count: u32, pub tags: Vec<String> }"
    done
    echo '#[derive(Clone)] pub struct Server { pub tool_router: ToolRouter<Self> }'
    echo '#[tool_router] impl Server {'
    for i in $(seq 1 "$n"); do
      echo "    /// Tool $i."
      echo "    #[tool] async fn tool_$i(&self, Parameters(input): Parameters<In$i>) -> String { format!(\"{} {}\", input.name, input.count + input.tags.len() as u32) }"
    done
    echo '}'
  } > "$work/rmcp/src/lib.rs"
}

time_build() { # dir → median seconds of 3 rebuilds of the crate alone
  (cd "$work/$1" && cargo build -q 2>/dev/null) || { echo "build of $1 failed" >&2; (cd "$work/$1" && cargo build); exit 1; }
  local times=()
  for _ in 1 2 3; do
    touch "$work/$1/src/lib.rs"
    local start end
    start=$(date +%s.%N)
    (cd "$work/$1" && cargo build -q)
    end=$(date +%s.%N)
    times+=("$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.3f", b-a}')")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 2p
}

gen_macro
gen_control
crates=(control macro)
if [ "$with_rmcp" = 1 ]; then gen_rmcp; crates+=(rmcp); fi
declare -A secs
for c in "${crates[@]}"; do secs[$c]=$(time_build "$c"); done
base=${secs[control]}
echo "compile time of $n tools (debug, crate alone, deps prebuilt, non-incremental, median of 3)"
for c in "${crates[@]}"; do
  awk -v c="$c" -v s="${secs[$c]}" -v b="$base" 'BEGIN{printf "%-8s %6.2f s  %5.2fx control\n", c, s, s/b}'
done
