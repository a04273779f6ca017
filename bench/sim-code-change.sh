#!/usr/bin/env bash
# The code-change session simulator's long run (tests/sim): SESSIONS random sessions (default
# 20,000) from seed START (default 1), each a real git workspace worked by an honest or hostile
# worker and judged by the referee (one-shot `verify`; LIVE_SHARE of them, default 0.05, under a
# live `watch` too) and by the simulator's reference model. Prints the counts (sessions, steps,
# judgments, vetoes and the slowest one, CPU time), each known open class's count and, for
# every disagreement, its seed and the command that replays it (the first ten shrunk to their
# minimal steps). Exit 0 when no session disagrees outside the known open classes.
#
# The referee and the simulator are built with PROFILE (default bench-fast: the release build
# without LTO; `cargo test`'s own debug build is several times slower per judgment).
# THREADS sessions run at once (default three per core, at least 6: a live session mostly waits).
#
#   bench/sim-code-change.sh
#   SESSIONS=1000 bench/sim-code-change.sh
#   SESSIONS=2000 START=100000 LIVE_SHARE=0.3 bench/sim-code-change.sh
#   SIM_ALL=1 SESSIONS=1000 bench/sim-code-change.sh     # the known open classes fail too
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
command -v git >/dev/null || { echo "sim-code-change.sh: needs git" >&2; exit 2; }
profile=${PROFILE:-bench-fast}
cores=$(nproc 2>/dev/null || echo 2)
threads=${THREADS:-$(( cores * 3 < 6 ? 6 : cores * 3 ))}
cd "$root"
SIM_SESSIONS=${SESSIONS:-20000} SIM_START=${START:-1} SIM_LIVE_SHARE=${LIVE_SHARE:-0.05} \
SIM_THREADS=$threads \
    cargo test --profile "$profile" --locked --test sim -- sim --exact --nocapture
