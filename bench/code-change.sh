#!/usr/bin/env bash
# How fast does `referee watch WORKSPACE --protocol code-change` judge an attempt? A git workspace
# of FILES files (default 1,000), a change of CHANGED files (default 10; every other trial one of
# them is protected: REJECT and APPROVE alternate), TRIALS trials (default 100, after 3 warm-ups):
# the time from the task record's rename into `.tasks/` to `.referee/OBSERVER-VERDICT-<task>.json`
# appearing, seen through inotify (bench/code_change.py). Target: p50 and p99 < 20 ms.
#
# Needs python3 and git. The referee is built with `cargo build --release` unless REFEREE names
# a binary.
#
#   bench/code-change.sh
#   TRIALS=30 FILES=5000 bench/code-change.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
command -v python3 >/dev/null || { echo "code-change.sh: needs python3" >&2; exit 2; }
command -v git >/dev/null || { echo "code-change.sh: needs git" >&2; exit 2; }
if [ -z "${REFEREE:-}" ]; then
    (cd "$root" && cargo build --release --locked --quiet)
    REFEREE="$root/target/release/referee"
fi
python3 "$here/code_change.py" "$REFEREE" --files "${FILES:-1000}" --changed "${CHANGED:-10}" \
    --trials "${TRIALS:-100}" --warmup "${WARMUP:-3}"
