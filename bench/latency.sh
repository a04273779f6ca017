#!/usr/bin/env bash
# How fast and how cheap is `referee watch`? One run measures, side by side:
#
#   (a) referee:     a violating gate-results file (GR-48 entered by hand, OBS-27) is renamed into
#                    a build directory at pass 2 → OBSERVER-STOP.md exists. Reset between trials:
#                    the clean file is renamed back in and the STOP must disappear. Measured twice
#                    (two daemons, two directories): with the writer's temp file beside the target
#                    (the usual atomic write) and with it outside the directory (only the rename is
#                    seen).
#   (b) the floor:   what the same job costs when scripted as cheaply as it gets: `inotifywait -m`
#                    piped into a shell loop that, on every event, greps the gate results for a
#                    manual source and writes (temp file, `mv`) or removes a STOP file. Beside it,
#                    a bare `inotifywait` process waking on the rename and printing its name (no
#                    check, no STOP: the kernel's and a process's wake-up alone).
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
# (a)–(c) each watch their own directory and run TRIALS trials (default 100, after 3 warm-ups),
# interleaved round-robin by bench/harness.py so a busy machine weighs on all of them alike; p50
# and p99 are timed with a monotonic clock and reactions are observed with inotify, never by
# polling. A compact table is printed at the end; the raw figures stay in $WORK (kept with KEEP=1).
#
# PARTS picks what runs (default `reaction idle storm`): (a)–(c) are `reaction`, (d) `idle`,
# (e) `storm`.
#
# Needs (Debian packages): python3, jq, procps; inotify-tools (inotifywait) when installed, else
# the floors run on bench/inotifywait.py, its stand-in for `inotifywait -m`. It installs nothing
# through apt. watchexec is not packaged in Debian (bookworm): when it is missing this script runs
# `cargo install watchexec-cli --locked` (a few minutes of compiling; set SKIP_WATCHEXEC=1 to skip
# part (c) instead). The referee is built with `cargo build --release` unless REFEREE names a binary.
#
#   bench/latency.sh                                        # everything, ~5 minutes after the builds
#   TRIALS=20 IDLE_SECS=10 STORM=5000 bench/latency.sh      # a quick look
#   PARTS=reaction TRIALS=30 SKIP_WATCHEXEC=1 bench/latency.sh   # referee vs the floor, ~30 s
#   BASELINE=/path/to/older/referee PARTS=reaction bench/latency.sh # … and vs another build
#   LARGE=1 PARTS=reaction TRIALS=30 SKIP_WATCHEXEC=1 bench/latency.sh # … on a 30,000-file build
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
TRIALS=${TRIALS:-100}
IDLE_SECS=${IDLE_SECS:-30}
STORM=${STORM:-50000}
PARTS=${PARTS:-reaction idle storm}

die() { echo "latency.sh: $*" >&2; exit 2; }

missing=()
command -v python3 >/dev/null || missing+=(python3)
command -v jq >/dev/null || missing+=(jq)
[ ${#missing[@]} -eq 0 ] || die "missing Debian packages: ${missing[*]} (apt-get install ${missing[*]})"

if [ -z "${REFEREE:-}" ]; then
    (cd "$root" && cargo build --release --quiet) || die "cargo build --release failed"
    REFEREE=$root/target/release/referee
fi
[ -x "$REFEREE" ] || die "no referee binary at \`$REFEREE\`"

case " $PARTS " in *" reaction "*) ;; *) SKIP_WATCHEXEC=1 ;; esac
if [ "${SKIP_WATCHEXEC:-0}" != 1 ] && ! command -v watchexec >/dev/null; then
    echo "watchexec is not installed and not packaged in Debian; installing it with cargo install watchexec-cli --locked"
    cargo install watchexec-cli --locked --quiet || die "cargo install watchexec-cli failed (SKIP_WATCHEXEC=1 skips part (c))"
    export PATH="$HOME/.cargo/bin:$PATH"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/referee-bench.XXXXXX")
pids=()
cleanup() {
    # A pid, or a process group as `-pgid`.
    for p in "${pids[@]:-}"; do
        [ -n "$p" ] && kill -- "$p" 2>/dev/null || true
    done
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# Without inotify-tools the floors' `inotifywait -m` is bench/inotifywait.py (python3 and inotify
# through ctypes; the same events, the same one name per line). It goes on PATH for this script
# and harness.py alone; a real inotifywait is always preferred.
INOTIFYWAIT=inotifywait
if ! command -v inotifywait >/dev/null; then
    mkdir "$WORK/bin"
    ln -s "$here/inotifywait.py" "$WORK/bin/inotifywait"
    export PATH="$WORK/bin:$PATH"
    INOTIFYWAIT="bench/inotifywait.py (inotify-tools is not installed)"
fi

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

start_watch() { # DIR [ARGS...] → sets $watch_pid (the binary: $bin, else $REFEREE)
    local dir=$1
    shift
    "${bin:-$REFEREE}" watch "$dir" --quiet "$@" >"$dir.log" 2>&1 &
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
echo "floor:   $INOTIFYWAIT"
echo "parts:   $PARTS"
echo

# LARGE=1: every reactor watches a large build instead (bench/make-large-build.sh, made once and
# copied): what an event costs when the directory holds 30,000 files.
if [ "${LARGE:-0}" = 1 ] && case " $PARTS " in *" reaction "*) true ;; *) false ;; esac; then
    echo "making the large build for the reaction part …"
    "$here/make-large-build.sh" "$WORK/large-proto" "$REFEREE" >"$WORK/large-proto.log"
    pass2() { cp -a "$WORK/large-proto" "$1"; }
fi

# ---- (a)–(c) reaction, side by side -------------------------------------------------------
# Every reactor watches its own build directory at pass 2; harness.py runs the trials round-robin
# over them, so whatever else the machine is doing weighs on all of them alike.
reaction() {
    local args=() wx=
    echo "(a)–(c) reaction: rename → STOP file (or wake-up), $TRIALS trials each, interleaved …"
    pass2 "$WORK/a"
    start_watch "$WORK/a"
    local watch_a=$watch_pid
    args+=(--stop "referee=$WORK/a")
    # The same with the writer's temp file outside the build directory: only the rename is seen.
    pass2 "$WORK/a2"
    start_watch "$WORK/a2"
    local watch_a2=$watch_pid
    mkdir -p "$WORK/tmp"
    args+=(--stop "referee-temp-outside=$WORK/a2:$WORK/tmp")
    # Another build of the referee (BASELINE=path, e.g. main's), for before/after in one run.
    local watch_a0=
    if [ -n "${BASELINE:-}" ]; then
        pass2 "$WORK/a0"
        bin=$BASELINE start_watch "$WORK/a0"
        watch_a0=$watch_pid
        args+=(--stop "baseline=$WORK/a0")
    fi

    # The scripted floor: inotifywait wakes a shell loop that greps the gate results and keeps a
    # STOP file (written beside, then renamed into place: the same observable job as the referee,
    # without judging anything else, fsyncing or logging). Two forks per reaction (grep, mv).
    pass2 "$WORK/f"
    cat >"$WORK/floor.sh" <<'FLOOR'
#!/bin/sh
# STOP while any gate entry says `"source": "manual"` (OBS-27), re-checked on every event.
cd "$1" || exit 2
inotifywait -m -q -e close_write,moved_to,delete --format '%f' . | while IFS= read -r f; do
    # Only the gate results matter to this check (their writers' temp files, the STOP itself and
    # everything else cost no fork).
    case $f in p3a-gate-results*.json) ;; *) continue ;; esac
    if grep -qs '"source": "manual"' p3a-gate-results*.json; then
        [ -e OBSERVER-STOP.md ] ||
            { printf '# STOP\nOBS-27: a gate entry has a manual source\n' >.stop.tmp && mv .stop.tmp OBSERVER-STOP.md; }
    else
        [ ! -e OBSERVER-STOP.md ] || rm -f OBSERVER-STOP.md
    fi
done
FLOOR
    # Its own session, so the whole pipeline (sh, inotifywait, the loop's subshell) is stopped
    # through its process group.
    setsid sh "$WORK/floor.sh" "$WORK/f" >"$WORK/f.log" 2>&1 &
    local floor_pgid=$!
    pids+=("-$floor_pgid")
    args+=(--stop "shell-floor=$WORK/f")

    pass2 "$WORK/b"
    args+=(--inotifywait "inotifywait=$WORK/b")

    if [ "${SKIP_WATCHEXEC:-0}" != 1 ]; then
        pass2 "$WORK/c"
        cat >"$WORK/check.sh" <<'CHECK'
#!/bin/sh
# What a user would script: STOP when any gate entry has a manual source.
cd "$1" || exit 2
if jq -e '[(if type == "array" then . else .gates end)[] | (.source // "" | ascii_downcase)
           | select(test("manual|hand") or . == "human" or . == "orchestrator")] | length > 0' \
       p3a-gate-results*.json >/dev/null 2>&1; then
    printf '# STOP\nOBS-27: a gate entry has a manual source\n' >.stop.tmp && mv .stop.tmp OBSERVER-STOP.md
else
    rm -f OBSERVER-STOP.md
fi
CHECK
        watchexec --version >"$WORK/watchexec.version" 2>&1 || true
        watchexec --watch "$WORK/c" --exts json --no-vcs-ignore --no-project-ignore --quiet \
            -- sh "$WORK/check.sh" "$WORK/c" >"$WORK/c.log" 2>&1 &
        wx=$!
        pids+=("$wx")
        args+=(--stop "watchexec=$WORK/c")
    fi
    sleep 1

    python3 "$here/harness.py" compare "$bad" "$good" --trials "$TRIALS" "${args[@]}" >"$WORK/reaction.jsonl"
    cat "$WORK/reaction.jsonl"
    if [ -n "$wx" ]; then
        kill "$wx" 2>/dev/null || true
        wait "$wx" 2>/dev/null || true
    fi
    kill -- "-$floor_pgid" 2>/dev/null || true
    stop_watch "$watch_a"
    stop_watch "$watch_a2"
    [ -z "$watch_a0" ] || stop_watch "$watch_a0"
}

# ---- (d) idle cost and memory --------------------------------------------------------------
idle() {
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
}

# ---- (e) event storm -----------------------------------------------------------------------
storm() {
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
}

# ---- the table -----------------------------------------------------------------------------
part() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
part reaction && reaction
part idle && idle
part storm && storm

python3 - "$WORK" <<'EOF'
import json, sys, os
w = sys.argv[1]
def load(n):
    p = os.path.join(w, n)
    return json.load(open(p)) if os.path.exists(p) else None
rows = {}
if os.path.exists(os.path.join(w, "reaction.jsonl")):
    rows = {r["name"]: r for r in map(json.loads, open(os.path.join(w, "reaction.jsonl")))}
d, e = load("d.json"), load("e.json")
print()
if rows:
    print(f"{'latency (ms), trials interleaved':<44}{'n':>5}{'p50':>10}{'p99':>10}{'max':>10}{'timeouts':>10}")
    for label, key in (("(a) referee watch: rename → STOP", "referee"),
                       ("    … temp file written outside the dir", "referee-temp-outside"),
                       ("    BASELINE build, temp file beside", "baseline"),
                       ("(b) inotifywait | sh: grep → STOP (floor)", "shell-floor"),
                       ("    inotifywait wakes (no check, no STOP)", "inotifywait"),
                       ("(c) watchexec + jq script → STOP", "watchexec")):
        r = rows.get(key)
        if r is None:
            print(f"{label:<44}{'skipped':>15}")
            continue
        print(f"{label:<44}{r['ok']:>5}{r.get('p50_ms', float('nan')):>10.2f}{r.get('p99_ms', float('nan')):>10.2f}"
              f"{r.get('max_ms', float('nan')):>10.2f}{r['timeouts']:>10}")
    a, f, c = rows.get("referee", {}), rows.get("shell-floor", {}), rows.get("watchexec", {})
    if "p50_ms" in a and "p50_ms" in f:
        print(f"  referee / shell floor: p50 ×{a['p50_ms'] / f['p50_ms']:.2f}, p99 ×{a['p99_ms'] / f['p99_ms']:.2f}")
    if "p50_ms" in a and "p50_ms" in c:
        print(f"  watchexec script / referee: p50 ×{c['p50_ms'] / a['p50_ms']:.2f}, p99 ×{c['p99_ms'] / a['p99_ms']:.2f}")
    print()
if d:
    print(f"(d) idle {d['secs']} s: {d['switches']} wake-ups ({d['switches'] / d['secs']:.2f}/s, {d['threads']} threads);"
          f" VmHWM idle {d['idle_hwm_kib'] / 1024:.1f} MiB")
    verdict = "ok" if d["large_hwm_kib"] <= 15 * 1024 else "OVER the 15 MB target"
    print(f"    large build: VmHWM {d['large_hwm_kib'] / 1024:.1f} MiB ({verdict}), VmRSS idle after the first evaluation"
          f" {d['large_idle_rss_kib'] / 1024:.1f} MiB, after one more change {d['large_rss_kib'] / 1024:.1f} MiB,"
          f" first evaluation {d['large_first_pass3_s'] or float('nan'):.1f} s")
if e:
    same = "equal" if not e["differences"] and e["results"] else f"DIFFER in {len(e['differences'])}: {e['differences'][:5]}"
    print(f"(e) storm: {e['storm']['files']} files in {e['storm']['seconds']:.2f} s; daemon finished {e['finished_after_s'] or float('nan'):.1f} s"
          f" after the run's last step (exit {e['daemon_exit']}, {e['rescans']} rescans); {e['results']} final verdicts vs verify --final: {same}")
EOF
