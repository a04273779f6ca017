#!/usr/bin/env bash
# The D10 pipeline simulator at length: RUNS random runs (default 10,000) of honest and hostile
# D10 pipelines written by real writers into real build directories, judged by `referee verify`
# at every phase boundary and, for a quarter of them, by a live `referee watch` with
# `referee status --sync` (tests/sim_d10, docs/simulators.md `## D10`).
#
# Prints the runs, hostile and live runs, phase boundaries, the STOP latency (p50, p99) from a
# violation on disk to the STOP naming it, the disagreeing runs by cause (an open class of
# tests/sim_d10/known_open.rs, or a new one) and by kind:pass:check, and for each new class its
# seed, the steps it shrank to and one replay command.
#
#   RUNS=10000          how many runs
#   THREADS=4           runs at once
#   SEED_BASE=random    the first seed (a run's seed is SEED_BASE + its index); give the one a
#                       report printed to repeat it
#   INCLUDE_OPEN=0      1: let the open classes (KNOWN_OPEN) into the runs and count them too
#   SHRINK=24           re-runs spent shrinking each new class's first run (0: none)
#   PROFILE=bench-fast  the cargo profile the referee and the simulator are built with
#
# Exit: 0 when no run disagrees (with INCLUDE_OPEN=1: always 0, the counts are the result),
# 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-10000}
THREADS=${THREADS:-4}
SEED_BASE=${SEED_BASE:-$(od -An -N6 -tx8 /dev/urandom | tr -d ' ')}
INCLUDE_OPEN=${INCLUDE_OPEN:-0}
SHRINK=${SHRINK:-24}
PROFILE=${PROFILE:-bench-fast}

for tool in dd cp rsync tar python3 git; do
    command -v "$tool" >/dev/null || { echo "sim-d10: needs $tool on PATH" >&2; exit 2; }
done

echo "sim-d10: $RUNS runs, $THREADS at once, seed base 0x${SEED_BASE#0x}, open classes $([ "$INCLUDE_OPEN" = 1 ] && echo included || echo excluded), profile $PROFILE" >&2
report_only=()
[ "$INCLUDE_OPEN" = 1 ] && report_only=(SIM_D10_REPORT_ONLY=1)
env SIM_D10_RUNS="$RUNS" SIM_D10_THREADS="$THREADS" SIM_D10_SEED_BASE="0x${SEED_BASE#0x}" \
    SIM_D10_INCLUDE_OPEN="$INCLUDE_OPEN" SIM_D10_SHRINK="$SHRINK" "${report_only[@]}" \
    cargo test --profile "$PROFILE" --test sim_d10 random_runs -- --exact --nocapture
