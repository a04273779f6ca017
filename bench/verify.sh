#!/usr/bin/env bash
# `referee verify` speed as whole processes, side by side in one hyperfine run:
#   - the clean fixture (target: < 5 ms);
#   - the large build (clean run + 30,000 screenshots + 9 auditor reports of ~2 MB) against
#     the floor: one process that walks the tree and reads every non-PNG file once
#     (target: within 2x of the floor).
# The in-process version of the same comparison is `cargo bench --bench verify`.
#
#   bench/verify.sh            # builds target/release/referee first
#
# Needs: hyperfine, python3 (Debian: hyperfine python3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
cargo build --release --quiet
referee=$PWD/target/release/referee
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$referee" replay clean "$work/clean" --speed 0 --quiet
bench/make-large-build.sh "$work/large" "$referee" >/dev/null
# The large build stops before the weaver; finish it so every check runs.
"$referee" replay clean "$work/large" --speed 0 --from 1h20m --quiet

hyperfine -N --warmup 5 --runs "${RUNS:-50}" --export-markdown "$work/verify.md" \
  "$referee verify $work/clean" \
  "$referee verify $work/large" \
  "sh -c 'find $work/large -type f ! -name \"*.png\" -exec cat {} + >/dev/null'"
cat "$work/verify.md"
