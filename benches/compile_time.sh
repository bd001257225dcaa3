#!/usr/bin/env bash
# Compile time of 200 tools: a crate of 200 `#[tool]` fns against a hand-written
# control (the same 200 input structs with serde + schemars derives and 200
# `ToolSpec::typed` registrations), and with `--rmcp` a crate of the same 200 tools
# on rmcp's `#[tool_router]`. Each crate is built once to prebuild its dependencies,
# then its own code is rebuilt (debug, non-incremental) and timed: median of 3.
#
# Also printed: the CPU time (user + system, less disturbed by other work on a busy
# machine than the wall clock) and the number of functions in the crate's
# unoptimized LLVM IR (`define`s; exact, a proxy for the code the crate makes LLVM
# compile).
#
# Usage: benches/compile_time.sh [--rmcp] [N]      (N tools, default 200)
# COMPILE_TIME_TARGET=dir keeps the dependencies' build in dir between runs;
# COMPILE_TIME_WORK=dir keeps the generated crates in dir (to profile them).
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
if [ -n "${COMPILE_TIME_WORK:-}" ]; then
  work=$COMPILE_TIME_WORK # kept: the generated crates, to profile them afterwards
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
export CARGO_TARGET_DIR="${COMPILE_TIME_TARGET:-$work/target}" CARGO_INCREMENTAL=0

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
    # `vis = "pub"`: the router is reachable, as in any server (which builds it in
    # its constructor), so its routes (the per-tool decode and call glue) are compiled.
    echo '#[tool_router(vis = "pub")] impl Server {'
    for i in $(seq 1 "$n"); do
      echo "    /// Tool $i."
      echo "    #[tool] async fn tool_$i(&self, Parameters(input): Parameters<In$i>) -> String { format!(\"{} {}\", input.name, input.count + input.tags.len() as u32) }"
    done
    echo '}'
  } > "$work/rmcp/src/lib.rs"
}

time_build() { # dir → "wall cpu functions": median wall and CPU seconds of 3 rebuilds
  (cd "$work/$1" && cargo build -q 2>/dev/null) || { echo "build of $1 failed" >&2; (cd "$work/$1" && cargo build); exit 1; }
  local walls=() cpus=()
  for _ in 1 2 3; do
    touch "$work/$1/src/lib.rs"
    local start end
    start=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o "$work/cpu" bash -c "cd '$work/$1' && cargo build -q"
    end=$(date +%s.%N)
    walls+=("$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.3f", b-a}')")
    cpus+=("$(awk '{printf "%.3f", $1+$2}' "$work/cpu")")
  done
  # The IR of the crate alone (a separate build with `--emit=llvm-ir`, not timed).
  rm -f "$CARGO_TARGET_DIR"/debug/deps/tm_"$1"-*.ll
  (cd "$work/$1" && cargo rustc -q --lib -- --emit=llvm-ir -C codegen-units=1) >/dev/null 2>&1 || true
  local fns
  fns=$(cat "$CARGO_TARGET_DIR"/debug/deps/tm_"$1"-*.ll 2>/dev/null | grep -c '^define' || true)
  echo "$(printf '%s\n' "${walls[@]}" | sort -n | sed -n 2p) $(printf '%s\n' "${cpus[@]}" | sort -n | sed -n 2p) ${fns:-?}"
}

gen_macro
gen_control
crates=(control macro)
if [ "$with_rmcp" = 1 ]; then gen_rmcp; crates+=(rmcp); fi
declare -A wall cpu fns
for c in "${crates[@]}"; do read -r wall[$c] cpu[$c] fns[$c] < <(time_build "$c"); done
echo "compile time of $n tools (debug, crate alone, deps prebuilt, non-incremental, median of 3)"
printf '%-8s %9s %9s %8s %9s %11s\n' crate wall ratio cpu ratio "IR fns"
for c in "${crates[@]}"; do
  awk -v c="$c" -v w="${wall[$c]}" -v u="${cpu[$c]}" -v f="${fns[$c]}" -v bw="${wall[control]}" -v bu="${cpu[control]}" \
    'BEGIN{printf "%-8s %7.2f s %8.2fx %6.2f s %8.2fx %11s\n", c, w, w/bw, u, u/bu, f}'
done
