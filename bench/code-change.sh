#!/usr/bin/env bash
# How fast does `referee watch WORKSPACE --protocol code-change` judge an attempt? A git workspace
# of FILES files (default 1,000), a change of CHANGED files (default 10; every other trial one of
# them is protected: REJECT and APPROVE alternate), TRIALS trials (default 100, after 3 warm-ups):
# the time from the task record's rename into `.tasks/` to `.referee/OBSERVER-VERDICT-<task>.json`
# appearing, seen through inotify (bench/code_change.py), side by side with one
# `git status --porcelain` on the same tree after each trial. FOLDERS spreads the files (default
# 20), RESTORE=1 has the orchestrator `git checkout -- .` after each verdict, VERIFY=N adds N
# one-shot `verify` runs interleaved with `git status`. Targets (issue 15): live p99 <= 0.7x one
# git status at 1,000 files and <= 0.2x at 20,000; verify within 1.2x of git status.
#
# Prints the medians and ratios on stderr and one JSON object on stdout.
#
# Needs python3 and git. The referee is built with `cargo build --release` unless REFEREE names
# a binary (PROFILE=bench-fast: the release build without LTO, quicker to build).
#
#   bench/code-change.sh
#   TRIALS=30 FILES=5000 bench/code-change.sh
#   FILES=1000 FOLDERS=1000 RESTORE=1 VERIFY=20 bench/code-change.sh
#   FILES=20000 FOLDERS=1000 RESTORE=1 VERIFY=20 TRIALS=60 bench/code-change.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
command -v python3 >/dev/null || { echo "code-change.sh: needs python3" >&2; exit 2; }
command -v git >/dev/null || { echo "code-change.sh: needs git" >&2; exit 2; }
if [ -z "${REFEREE:-}" ]; then
    profile=${PROFILE:-release}
    (cd "$root" && cargo build --profile "$profile" --locked --quiet)
    REFEREE="$root/target/$profile/referee"
fi
python3 "$here/code_change.py" "$REFEREE" --files "${FILES:-1000}" --folders "${FOLDERS:-20}" \
    --changed "${CHANGED:-10}" --trials "${TRIALS:-100}" --warmup "${WARMUP:-3}" \
    ${RESTORE:+--restore} --verify "${VERIFY:-0}"
