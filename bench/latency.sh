#!/usr/bin/env bash
# How fast and how cheap is `referee watch`? One run measures, side by side:
#
#   (a) referee:     a violating gate-results file (GR-48 entered by hand, OBS-27) is renamed into
#                    a build directory at pass 2 → OBSERVER-STOP.md exists. Reset between trials:
#                    the clean file is renamed back in and the STOP must disappear. Measured twice:
#                    with the writer's temp file beside the target (the usual atomic write) and
#                    with it outside the directory (only the rename is seen).
#   (b) the floor:   an `inotifywait` process waking on the same rename and printing its name.
#   (c) a script:    what a user would otherwise write: `watchexec` running a jq check that
#                    writes/removes a STOP file (watchexec's default 50 ms debounce).
#   (d) idle cost:   wake-ups (context switches of all its threads) of `referee watch` on an
#                    idle build for IDLE_SECS; peak RSS (VmHWM) idle, and on the large build
#                    (bench/make-large-build.sh: clean run + 30,000 screenshots + nine ~2 MB
#                    auditor reports) — target ≤ 15 MB — with VmRSS idle after the first
#                    evaluation and after one more change.
#   (e) event storm: STORM files created as fast as possible in the watched directory, then the
#                    rest of a finished run; the daemon's final verdicts must equal
#                    `referee verify --final --format json`'s.
#
# (a)–(c) run TRIALS trials each (default 100, after 3 warm-ups) and report p50 and p99, timed by
# bench/harness.py with a monotonic clock; reactions are observed with inotify, never by polling.
# A compact table is printed at the end; the raw figures stay in $WORK (kept with KEEP=1).
#
# Needs (Debian packages): python3, inotify-tools (inotifywait), jq, procps. It installs nothing
# through apt. watchexec is not packaged in Debian (bookworm): when it is missing this script runs
# `cargo install watchexec-cli --locked` (a few minutes of compiling; set SKIP_WATCHEXEC=1 to skip
# part (c) instead). The referee is built with `cargo build --release` unless REFEREE names a binary.
#
#   bench/latency.sh                          # everything, ~5 minutes after the builds
#   TRIALS=20 IDLE_SECS=10 STORM=5000 bench/latency.sh      # a quick look
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
TRIALS=${TRIALS:-100}
IDLE_SECS=${IDLE_SECS:-30}
STORM=${STORM:-50000}

die() { echo "latency.sh: $*" >&2; exit 2; }

missing=()
command -v python3 >/dev/null || missing+=(python3)
command -v inotifywait >/dev/null || missing+=(inotify-tools)
command -v jq >/dev/null || missing+=(jq)
[ ${#missing[@]} -eq 0 ] || die "missing Debian packages: ${missing[*]} (apt-get install ${missing[*]})"

if [ -z "${REFEREE:-}" ]; then
    (cd "$root" && cargo build --release --quiet) || die "cargo build --release failed"
    REFEREE=$root/target/release/referee
fi
[ -x "$REFEREE" ] || die "no referee binary at \`$REFEREE\`"

if [ "${SKIP_WATCHEXEC:-0}" != 1 ] && ! command -v watchexec >/dev/null; then
    echo "watchexec is not installed and not packaged in Debian; installing it with cargo install watchexec-cli --locked"
    cargo install watchexec-cli --locked --quiet || die "cargo install watchexec-cli failed (SKIP_WATCHEXEC=1 skips part (c))"
    export PATH="$HOME/.cargo/bin:$PATH"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/referee-bench.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]:-}"; do
        [ -n "$p" ] && kill "$p" 2>/dev/null || true
    done
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

good=$root/fixtures/content/gate-results.json
bad=$WORK/gate-results-manual.json
sed 's/{"id": "GR-48", "result": "PASS", "source": "gate-runner"}/{"id": "GR-48", "result": "PASS", "source": "manual"}/' \
    "$good" >"$bad"
cmp -s "$good" "$bad" && die "could not make the violating gate results"

# A build at pass 2: screenshots and gate results in place, scan recorded, no auditor yet.
pass2() { "$REFEREE" replay clean "$1" --speed 0 --until 50m --quiet; }

wait_for() { # FILE SECONDS
    local i=0
    while [ ! -e "$1" ]; do
        i=$((i + 1))
        [ $i -gt $(($2 * 20)) ] && return 1
        sleep 0.05
    done
}

start_watch() { # DIR [ARGS...] → sets $watch_pid
    local dir=$1
    shift
    "$REFEREE" watch "$dir" --quiet "$@" >"$dir.log" 2>&1 &
    watch_pid=$!
    pids+=("$watch_pid")
    wait_for "$dir/OBSERVER-HEARTBEAT.json" 10 || die "referee watch did not start on $dir: $(cat "$dir.log")"
}

stop_watch() { # PID
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# Sum of voluntary + involuntary context switches over all threads of a process.
switches() {
    local total=0 n
    for s in /proc/"$1"/task/*/status; do
        n=$(awk '/^(non)?voluntary_ctxt_switches/ {s += $2} END {print s + 0}' "$s" 2>/dev/null || echo 0)
        total=$((total + n))
    done
    echo "$total"
}

kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }

echo "referee: $REFEREE ($("$REFEREE" --version))"
echo "work:    $WORK"
echo "trials:  $TRIALS per latency figure"
echo

# ---- (a) referee ---------------------------------------------------------------------------
echo "(a) referee watch: rename → OBSERVER-STOP.md …"
pass2 "$WORK/a"
start_watch "$WORK/a"
python3 "$here/harness.py" stop "$WORK/a" "$bad" "$good" --trials "$TRIALS" --name referee >"$WORK/a.json"
cat "$WORK/a.json"
# The same with the writer's temp file outside the build directory: only the rename is seen.
mkdir -p "$WORK/tmp"
python3 "$here/harness.py" stop "$WORK/a" "$bad" "$good" --trials "$TRIALS" --name referee-temp-outside \
    --temp-dir "$WORK/tmp" >"$WORK/a2.json"
stop_watch "$watch_pid"
cat "$WORK/a2.json"

# ---- (b) inotifywait -----------------------------------------------------------------------
echo "(b) inotifywait: rename → wake-up …"
pass2 "$WORK/b"
python3 "$here/harness.py" inotifywait "$WORK/b" "$good" --trials "$TRIALS" --name inotifywait >"$WORK/b.json"
cat "$WORK/b.json"

# ---- (c) watchexec + jq --------------------------------------------------------------------
if [ "${SKIP_WATCHEXEC:-0}" != 1 ]; then
    echo "(c) watchexec + jq script: rename → STOP file …"
    pass2 "$WORK/c"
    cat >"$WORK/check.sh" <<'EOF'
#!/bin/sh
# What a user would script: STOP when any gate entry has a manual source (SPEC §2.2).
cd "$1" || exit 2
if jq -e '[(if type == "array" then . else .gates end)[] | (.source // "" | ascii_downcase)
           | select(test("manual|hand") or . == "human" or . == "orchestrator")] | length > 0' \
       p3a-gate-results*.json >/dev/null 2>&1; then
    printf '# STOP\nOBS-27: a gate entry has a manual source\n' >.stop.tmp && mv .stop.tmp OBSERVER-STOP.md
else
    rm -f OBSERVER-STOP.md
fi
EOF
    watchexec --version >"$WORK/watchexec.version" 2>&1 || true
    watchexec --watch "$WORK/c" --exts json --no-vcs-ignore --no-project-ignore --quiet \
        -- sh "$WORK/check.sh" "$WORK/c" >"$WORK/c.log" 2>&1 &
    wx=$!
    pids+=("$wx")
    sleep 1
    python3 "$here/harness.py" stop "$WORK/c" "$bad" "$good" --trials "$TRIALS" --name watchexec >"$WORK/c.json"
    kill "$wx" 2>/dev/null || true
    wait "$wx" 2>/dev/null || true
    cat "$WORK/c.json"
else
    echo '{"name": "watchexec", "skipped": true}' >"$WORK/c.json"
fi

# ---- (d) idle cost and memory --------------------------------------------------------------
echo "(d) idle: $IDLE_SECS s of an idle build …"
pass2 "$WORK/d"
start_watch "$WORK/d"
sleep 3
s0=$(switches "$watch_pid")
sleep "$IDLE_SECS"
s1=$(switches "$watch_pid")
idle_hwm=$(kib "$watch_pid" VmHWM)
threads=$(ls /proc/"$watch_pid"/task | wc -l)
stop_watch "$watch_pid"

echo "(d) memory: the large build …"
"$here/make-large-build.sh" "$WORK/large" "$REFEREE" >"$WORK/large.log"
t0=$(date +%s%N)
start_watch "$WORK/large"
wait_for "$WORK/large/OBSERVER-PASS-3.md" 120 || die "no pass 3 on the large build"
t1=$(date +%s%N)
# Idle after the first evaluation: what the daemon keeps between evaluations.
sleep 3
large_idle_rss=$(kib "$watch_pid" VmRSS)
# One change after the first evaluation: the orchestrator rewrites the tracker.
cp "$WORK/large/EXECUTION-TRACKER.md" "$WORK/large/.tracker.tmp"
touch -r "$WORK/large/EXECUTION-TRACKER.md" "$WORK/large/.tracker.tmp"
mv "$WORK/large/.tracker.tmp" "$WORK/large/EXECUTION-TRACKER.md"
sleep 3
large_hwm=$(kib "$watch_pid" VmHWM)
large_rss=$(kib "$watch_pid" VmRSS)
stop_watch "$watch_pid"
jq -n --argjson s "$((s1 - s0))" --argjson secs "$IDLE_SECS" --argjson idle "$idle_hwm" \
    --argjson threads "$threads" --argjson hwm "$large_hwm" --argjson rss "$large_rss" \
    --argjson idle_rss "$large_idle_rss" \
    --argjson first_ms "$(((t1 - t0) / 1000000))" \
    '{switches: $s, secs: $secs, idle_hwm_kib: $idle, threads: $threads, large_hwm_kib: $hwm,
      large_idle_rss_kib: $idle_rss, large_rss_kib: $rss, large_first_pass3_s: ($first_ms / 1000)}' >"$WORK/d.json"
cat "$WORK/d.json"

# ---- (e) event storm -----------------------------------------------------------------------
echo "(e) storm: $STORM files, then the rest of the run …"
pass2 "$WORK/e"
start_watch "$WORK/e" --timeout 10m
python3 - "$WORK/e" "$STORM" >"$WORK/storm.json" <<'EOF'
import json, os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
t = time.perf_counter()
for i in range(n):
    fd = os.open(os.path.join(d, f"storm-{i}.txt"), os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
print(json.dumps({"files": n, "seconds": round(time.perf_counter() - t, 3)}))
EOF
t0=$(date +%s%N)
"$REFEREE" replay clean "$WORK/e" --from 50m --speed 0 --quiet
# The run is complete: the daemon finishes by itself (a watchdog stops it after 120 s).
(sleep 120 && kill -TERM "$watch_pid" 2>/dev/null && echo "the daemon did not finish within 120 s" >&2) &
watchdog=$!
code=0
wait "$watch_pid" || code=$?
t1=$(date +%s%N)
kill "$watchdog" 2>/dev/null || true
"$REFEREE" verify "$WORK/e" --final --format json >"$WORK/e-verify.json" || true
jq -c 'select(.payload.event == "end") | .payload' "$WORK/e/OBSERVER-EVENTS.jsonl" | tail -n 1 >"$WORK/e-end.json"
rescans=$(jq -c 'select(.payload.event == "rescan")' "$WORK/e/OBSERVER-EVENTS.jsonl" | wc -l)
diffs=$(jq -n --slurpfile v "$WORK/e-verify.json" --slurpfile d "$WORK/e-end.json" '
    ([$v[0].results[] | {key: "\(.pass):\(.check)", value: .status}] | from_entries) as $a
  | ([$d[0].results[] | {key: "\(.pass):\(.check)", value: .status}] | from_entries) as $b
  | [($a + $b) | keys[] | select($a[.] != $b[.])] ')
jq -n --slurpfile s "$WORK/storm.json" --argjson diffs "$diffs" --argjson code "$code" \
    --argjson rescans "$rescans" --argjson finish_ms "$(((t1 - t0) / 1000000))" \
    --argjson n "$(jq '.results | length' "$WORK/e-end.json" 2>/dev/null || echo 0)" \
    '{storm: $s[0], daemon_exit: $code, finished_after_s: ($finish_ms / 1000),
      rescans: $rescans, results: $n, differences: $diffs}' >"$WORK/e.json"
cat "$WORK/e.json"

# ---- the table -----------------------------------------------------------------------------
python3 - "$WORK" <<'EOF'
import json, sys, os
w = sys.argv[1]
load = lambda n: json.load(open(os.path.join(w, n)))
a, a2, b, c, d, e = (load(f"{x}.json") for x in ("a", "a2", "b", "c", "d", "e"))
print()
print(f"{'latency (ms)':<44}{'n':>5}{'p50':>10}{'p99':>10}{'max':>10}{'timeouts':>10}")
for label, r in (("(a) referee watch: rename → STOP", a),
                 ("    … temp file written outside the dir", a2), ("(b) inotifywait wakes (floor)", b),
                 ("(c) watchexec + jq script → STOP", c)):
    if r.get("skipped"):
        print(f"{label:<44}{'skipped':>15}")
        continue
    print(f"{label:<44}{r['ok']:>5}{r.get('p50_ms', float('nan')):>10.2f}{r.get('p99_ms', float('nan')):>10.2f}"
          f"{r.get('max_ms', float('nan')):>10.2f}{r['timeouts']:>10}")
if "p50_ms" in a and "p50_ms" in b:
    print(f"  referee / floor: p50 ×{a['p50_ms'] / b['p50_ms']:.0f}, p99 ×{a['p99_ms'] / b['p99_ms']:.0f}")
if "p50_ms" in a and "p50_ms" in c:
    print(f"  watchexec script / referee: p50 ×{c['p50_ms'] / a['p50_ms']:.2f}, p99 ×{c['p99_ms'] / a['p99_ms']:.2f}")
print()
print(f"(d) idle {d['secs']} s: {d['switches']} wake-ups ({d['switches'] / d['secs']:.2f}/s, {d['threads']} threads);"
      f" VmHWM idle {d['idle_hwm_kib'] / 1024:.1f} MiB")
verdict = "ok" if d["large_hwm_kib"] <= 15 * 1024 else "OVER the 15 MB target"
print(f"    large build: VmHWM {d['large_hwm_kib'] / 1024:.1f} MiB ({verdict}), VmRSS idle after the first evaluation"
      f" {d['large_idle_rss_kib'] / 1024:.1f} MiB, after one more change {d['large_rss_kib'] / 1024:.1f} MiB,"
      f" first evaluation {d['large_first_pass3_s'] or float('nan'):.1f} s")
same = "equal" if not e["differences"] and e["results"] else f"DIFFER in {len(e['differences'])}: {e['differences'][:5]}"
print(f"(e) storm: {e['storm']['files']} files in {e['storm']['seconds']:.2f} s; daemon finished {e['finished_after_s'] or float('nan'):.1f} s"
      f" after the run's last step (exit {e['daemon_exit']}, {e['rescans']} rescans); {e['results']} final verdicts vs verify --final: {same}")
EOF
