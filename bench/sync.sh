#!/usr/bin/env bash
# What a `referee status --sync --require-live` round trip costs: a build at pass 2 (the clean
# replay up to 50 minutes: screenshots, gate results, the scan), one `referee watch` on it, and
# RUNS (default 300, after 5 warm-ups) `status --sync` calls one after another, each timed with a
# monotonic clock from the call to its exit. With BASELINE, a second build directory and daemon
# run the other binary, and the calls alternate between the two (a busy machine weighs on both
# alike). Prints p50, p90, p99 and the mean per binary, in milliseconds.
#
#   REFEREE=target/bench-fast/referee RUNS=300 bench/sync.sh
#   REFEREE=new BASELINE=old RUNS=300 bench/sync.sh
#   LARGE=1 …     the build also holds bench/make-large-build.sh's 30,000 screenshots
#
# Needs python3. Builds nothing: REFEREE (default target/bench-fast/referee) must exist.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
REFEREE=${REFEREE:-$root/target/bench-fast/referee}
RUNS=${RUNS:-300}
[ -x "$REFEREE" ] || { echo "sync.sh: no referee binary at $REFEREE" >&2; exit 2; }
command -v python3 >/dev/null || { echo "sync.sh: needs python3" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/referee-sync.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

setup() { # NAME BINARY → a build at pass 2 watched by BINARY
    local dir=$WORK/$1
    "$2" replay clean "$dir" --speed 0 --until 50m --quiet
    if [ "${LARGE:-0}" = 1 ]; then
        mkdir -p "$dir/screenshots/bulk"
        python3 - "$dir/screenshots/bulk" <<'PY'
import os, sys
d = sys.argv[1]
for i in range(30000):
    open(os.path.join(d, f"s{i:05}.png"), "wb").close()
PY
    fi
    XDG_STATE_HOME=$WORK/state-$1 "$2" watch "$dir" --quiet >"$dir.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 200); do
        [ -e "$dir/OBSERVER-HEARTBEAT.json" ] && return 0
        sleep 0.05
    done
    echo "sync.sh: referee watch did not start on $dir: $(cat "$dir.log")" >&2
    exit 2
}

setup new "$REFEREE"
args=("new=$REFEREE=$WORK/new=$WORK/state-new")
if [ -n "${BASELINE:-}" ]; then
    setup old "$BASELINE"
    args+=("old=$BASELINE=$WORK/old=$WORK/state-old")
fi

python3 - "$RUNS" "${args[@]}" <<'PY'
import os, subprocess, sys, time
runs = int(sys.argv[1])
subjects = [a.split("=", 3) for a in sys.argv[2:]]
times = {name: [] for name, *_ in subjects}
def ask(binary, build, state):
    env = dict(os.environ, XDG_STATE_HOME=state)
    t0 = time.monotonic()
    r = subprocess.run([binary, "status", build, "--sync", "--require-live", "--wait", "10s"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    dt = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"sync.sh: status --sync on {build} exited {r.returncode}: {r.stderr.decode()}")
    return dt
for i in range(5 + runs):
    for name, binary, build, state in subjects:
        dt = ask(binary, build, state)
        if i >= 5:
            times[name].append(dt * 1000)
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]
print(f"{'binary':8} {'runs':>5} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
for name, binary, *_ in subjects:
    xs = times[name]
    print(f"{name:8} {len(xs):5} {pct(xs,50):8.2f} {pct(xs,90):8.2f} {pct(xs,99):8.2f} {sum(xs)/len(xs):8.2f}  {binary}")
PY
