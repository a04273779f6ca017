#!/usr/bin/env bash
# CPU time of the referee's Go parser and of tree-sitter-go 0.25 on the same files, interleaved
# runs under `perf stat -e task-clock` (a shared machine's wall clock is noise), in the
# referee's release profile:
#
#   find /path/to/go/src -name '*.go' | sort > files.txt
#   bench/go-parsers.sh files.txt [RUNS]      # RUNS (default 3) of each, alternating
#
# Each run reads every file, then parses each with one parser, and prints how many pass; perf
# prints the task-clock. MB/s = the MB printed / task-clock seconds (file reading included,
# the same for both). Builds bench/go-parsers into a temporary target directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
list=${1:?usage: bench/go-parsers.sh FILES.txt [RUNS]}
runs=${2:-3}
target=${CARGO_TARGET_DIR:-${TMPDIR:-/tmp}/referee-go-parsers}
cargo build --quiet --release --manifest-path "$here/go-parsers/Cargo.toml" --target-dir "$target"
bin="$target/release/go-parsers"
for _ in $(seq "$runs"); do
  for which in ours ts; do
    perf stat -e task-clock -x, "$bin" 1 "$which" <"$list" 2>&1 | tr '\n' ' '
    echo
  done
done
