#!/usr/bin/env bash
# Per-iteration figures of a `benches/counts.rs` workload: the run with N iterations
# minus the run with 0, divided by N (the set-up and warm-up cancel out).
#
#   benches/counts.sh [--bin PATH] WORKLOAD [N]        instructions (callgrind)
#   benches/counts.sh --dhat [--bin PATH] WORKLOAD [N] allocations and bytes
#                                                      (valgrind's DHAT: blocks and
#                                                      bytes allocated in total, and
#                                                      live at exit)
#
# Without --bin the newest `counts` bench binary is used: build it first with
# `cargo bench --features mcp --bench counts --no-run` (the rmcp workloads need
# `--features mcp`). N defaults to 2000.
set -euo pipefail
tool=callgrind
bin=
while [ $# -gt 0 ]; do
  case "$1" in
    --dhat) tool=dhat; shift ;;
    --bin) bin=$2; shift 2 ;;
    *) break ;;
  esac
done
workload=${1:?usage: counts.sh [--dhat] [--bin PATH] WORKLOAD [N]}
n=${2:-2000}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$bin" ]; then
  bin=$(ls -t "$root"/target/release/deps/counts-* | grep -v '\.d$' | head -1)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "$tool" = callgrind ]; then
  ir() { # N → total instructions
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$bin" "$workload" "$1" >/dev/null 2>&1
    awk '/^summary:/ {print $2}' "$tmp/cg"
  }
  a=$(ir 0)
  b=$(ir "$n")
  awk -v a="$a" -v b="$b" -v n="$n" -v w="$workload" \
    'BEGIN {printf "%s: %.0f instructions per iteration (%d iterations)\n", w, (b - a) / n, n}'
else
  stats() { # N → "total_bytes total_blocks end_bytes end_blocks"
    valgrind --tool=dhat --dhat-out-file=/dev/null "$bin" "$workload" "$1" 2>"$tmp/dh" >/dev/null
    awk '
      /Total:/ {gsub(",", ""); tb=$3; tk=$6}
      /At t-end:/ {gsub(",", ""); eb=$4; ek=$7}
      END {print tb, tk, eb, ek}' "$tmp/dh"
  }
  read -r tb0 tk0 eb0 ek0 < <(stats 0)
  read -r tb1 tk1 eb1 ek1 < <(stats "$n")
  awk -v n="$n" -v w="$workload" -v tb="$((tb1 - tb0))" -v tk="$((tk1 - tk0))" \
      -v eb="$((eb1 - eb0))" -v ek="$((ek1 - ek0))" \
    'BEGIN {printf "%s: %.2f allocations (%.1f bytes) per iteration; live at exit: %.1f bytes in %.2f blocks per iteration (%d iterations)\n", w, tk / n, tb / n, eb / n, ek / n, n}'
fi
