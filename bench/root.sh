#!/usr/bin/env bash
# Many builds: one `referee watch --root ROOT` process against one `referee watch DIR` per build.
# BUILDS build directories (default 500), each a copy of one build at pass 2 (`referee replay clean
# --until 50m`), are refereed
#
#   (a) one process:  `referee watch --root ROOT --quiet` (one inotify instance for every build);
#   (b) per process:  `referee watch DIR --quiet` for each build (skip with SKIP_PER_PROCESS=1),
#                     on a fresh copy of the same builds.
#
# Each side measures (bench/root_harness.py, python3 standard library, monotonic clock):
#
#   startup     first spawn → every build has OBSERVER-HEARTBEAT.json and OBSERVER-PASS-2.md.
#   idle        VmRSS, VmHWM, PSS (smaps_rollup: shared pages split), threads, open fds, inotify
#               instances (fds → anon_inode:inotify), CPU% of the referee(s), summed over the processes
#               in (b); in (b) also how many processes fell back to polling: Linux allows
#               fs.inotify.max_user_instances (128 by default) inotify instances per user, a
#               referee past it polls every 200 ms and says so on stderr.
#   reaction    TRIALS builds (default 100, distinct, drawn with a seeded RNG: SEED, default 1; the
#               same builds on both sides; 3 warm-ups more): a violating gate-results file (GR-48
#               entered by hand, OBS-27) is copied to a temp file inside the build, the clock
#               starts, it is renamed to p3a-gate-results.json, the clock stops when that build's
#               OBSERVER-STOP.md appears. Reset: the clean file is renamed back in and the STOP
#               must go. p50/p99/mean/max; in (b) also split into native and polling builds.
#   cross-talk  a STOP appearing in any build but the trial's target, or standing in another build
#               while the target's does (each counts; must be 0).
#   pickup      (a) a new build renamed into ROOT → its heartbeat and PASS-2 are there.
#   peak        VmHWM at the end (after the trials); shutdown: SIGTERM → every process exited;
#               every build must have OBSERVER-REPORT.md.
#
# Every reaction is seen through one inotify instance of the harness on all the build directories,
# never by polling. The harness makes it before any referee starts: in (b) it holds one of the
# user's instances (as would any other inotify user: the figure before the start is printed).
# Targets of (a): reaction p50 ≤ 10 ms, p99 ≤ 50 ms, no cross-talk, peak RSS ≤ 200 MB.
# A compact table is printed at the end; the raw figures are in $WORK/root-bench.json (kept with
# KEEP=1). Figures are noisy on a small machine shared with other work: the load average and CPU
# pressure (/proc/pressure/cpu, "some" avg10) at the start and the end of each side are recorded.
#
# Needs (Debian packages): python3, jq, procps. Needs no root. The referee is built with
# `cargo build --release` unless REFEREE names a binary.
#
#   bench/root.sh                              # 500 builds, 100 trials: a few minutes
#   BUILDS=50 TRIALS=20 bench/root.sh          # a quick look, well under a minute or two
#   SKIP_PER_PROCESS=1 KEEP=1 bench/root.sh    # only --root; keep $WORK
#   STORM=1 SKIP_PER_PROCESS=1 bench/root.sh   # and --root again with a file-create storm in one build
#   STORM=5 BUILDS=50 bench/root.sh            # … in five builds
#
# STORM=N (a'): after (a), the same on fresh copies with the first N builds in a storm (a process
# per build creating, renaming and removing files in scratch/storm/ as fast as it can, for the
# whole of the trials); the trials run on the other builds, the same targets as (a) (same seed;
# (a) then never picks the first N either), so (a) and (a') are the same measurement without and
# with the storm, side by side in one run. Issue 16: one build's storm must not delay another's STOP.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
BUILDS=${BUILDS:-500}
TRIALS=${TRIALS:-100}
SEED=${SEED:-1}

die() { echo "root.sh: $*" >&2; exit 2; }

missing=()
command -v python3 >/dev/null || missing+=(python3)
command -v jq >/dev/null || missing+=(jq)
[ ${#missing[@]} -eq 0 ] || die "missing Debian packages: ${missing[*]} (apt-get install ${missing[*]})"
if ! [ "$BUILDS" -ge 1 ] 2>/dev/null || ! [ "$TRIALS" -ge 1 ] 2>/dev/null; then
    die "BUILDS and TRIALS must be whole numbers of at least 1"
fi

if [ -z "${REFEREE:-}" ]; then
    (cd "$root" && cargo build --release --quiet) || die "cargo build --release failed"
    REFEREE=$root/target/release/referee
fi
[ -x "$REFEREE" ] || die "no referee binary at \`$REFEREE\`"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/referee-root.XXXXXX")
harness_pid=
cleanup() {
    # The harness kills its referees itself; if it died, kill the PIDs it recorded (its children).
    if [ -n "$harness_pid" ]; then kill "$harness_pid" 2>/dev/null || true; fi
    if [ -s "$WORK/pids" ]; then
        while read -r p; do
            kill -TERM "$p" 2>/dev/null || true
        done <"$WORK/pids"
        sleep 0.5
        while read -r p; do
            kill -KILL "$p" 2>/dev/null || true
        done <"$WORK/pids"
    fi
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

good=$root/fixtures/content/gate-results.json
bad=$WORK/gate-results-manual.json
sed 's/{"id": "GR-48", "result": "PASS", "source": "gate-runner"}/{"id": "GR-48", "result": "PASS", "source": "manual"}/' \
    "$good" >"$bad"
cmp -s "$good" "$bad" && die "could not make the violating gate results"

echo "referee: $REFEREE ($("$REFEREE" --version))"
echo "work:    $WORK"
echo "builds:  $BUILDS; trials: $TRIALS (seed $SEED); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "inotify: max_user_instances $(cat /proc/sys/fs/inotify/max_user_instances)," \
    "max_user_watches $(cat /proc/sys/fs/inotify/max_user_watches)," \
    "max_queued_events $(cat /proc/sys/fs/inotify/max_queued_events)"
echo

# One build at pass 2 (screenshots and gate results in place, scan recorded, no auditor yet),
# copied BUILDS times for each side.
"$REFEREE" replay clean "$WORK/template" --speed 0 --until 50m --quiet
make_builds() { # DIR
    mkdir -p "$1"
    local i
    for ((i = 1; i <= BUILDS; i++)); do
        cp -a "$WORK/template" "$(printf '%s/build-%04d' "$1" "$i")"
    done
}

run() { # MODE ROOT OUT [ARGS...]
    local mode=$1 dir=$2 out=$3
    shift 3
    python3 "$here/root_harness.py" "$mode" --referee "$REFEREE" --root "$dir" --bad "$bad" --good "$good" \
        --logs "$WORK/logs-$mode" --pids "$WORK/pids" --trials "$TRIALS" --seed "$SEED" "$@" >"$out" &
    harness_pid=$!
    wait "$harness_pid" || die "the harness failed in mode $mode (logs in $WORK/logs-$mode; KEEP=1 keeps them)"
    harness_pid=
}

# ---- (a) one process -----------------------------------------------------------------------
echo "(a) one process: referee watch --root on $BUILDS builds …"
make_builds "$WORK/root-a"
STORM=${STORM:-0}
[ "$STORM" -ge 0 ] 2>/dev/null && [ "$STORM" -lt "$BUILDS" ] || die "STORM must be a whole number below BUILDS"
run root "$WORK/root-a" "$WORK/a.json" --template "$WORK/template" --spare "$STORM"

# ---- (b) one process per build -------------------------------------------------------------
if [ "${SKIP_PER_PROCESS:-0}" != 1 ]; then
    echo "(b) per process: $BUILDS × referee watch DIR …"
    make_builds "$WORK/root-b"
    run per-process "$WORK/root-b" "$WORK/b.json"
else
    echo '{"mode": "per-process", "skipped": true}' >"$WORK/b.json"
fi

jq -n --slurpfile a "$WORK/a.json" --slurpfile b "$WORK/b.json" --arg referee "$REFEREE" \
    --argjson builds "$BUILDS" --argjson trials "$TRIALS" --argjson seed "$SEED" --argjson cores "$(nproc)" \
    '{referee: $referee, builds: $builds, trials: $trials, seed: $seed, cores: $cores,
      one_process: $a[0], per_process: $b[0]}' >"$WORK/root-bench.json"

# ---- the table -----------------------------------------------------------------------------
python3 - "$WORK/root-bench.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
a, b = r["one_process"], r["per_process"]
skip = b.get("skipped")
mib = lambda k: f"{k / 1024:.1f} MiB"
def get(d, *path, fmt=str):
    for p in path:
        if not isinstance(d, dict) or d.get(p) is None:
            return "—"
        d = d[p]
    return fmt(d)
ms = lambda v: f"{v:.1f}"
rows = [
    ("startup: all builds beating (s)", get(a, "startup", "all_s"), get(b, "startup", "all_s")),
    ("reaction p50 / p99 (ms)",
     f"{get(a, 'reaction', 'p50_ms', fmt=ms)} / {get(a, 'reaction', 'p99_ms', fmt=ms)}",
     f"{get(b, 'reaction', 'p50_ms', fmt=ms)} / {get(b, 'reaction', 'p99_ms', fmt=ms)}"),
    ("  mean / max (ms)",
     f"{get(a, 'reaction', 'mean_ms', fmt=ms)} / {get(a, 'reaction', 'max_ms', fmt=ms)}",
     f"{get(b, 'reaction', 'mean_ms', fmt=ms)} / {get(b, 'reaction', 'max_ms', fmt=ms)}"),
    ("  native builds p50 / p99 (n)", "",
     f"{get(b, 'reaction_native', 'p50_ms', fmt=ms)} / {get(b, 'reaction_native', 'p99_ms', fmt=ms)}"
     f" ({get(b, 'reaction_native', 'n')})"),
    ("  polling builds p50 / p99 (n)", "",
     f"{get(b, 'reaction_polling', 'p50_ms', fmt=ms)} / {get(b, 'reaction_polling', 'p99_ms', fmt=ms)}"
     f" ({get(b, 'reaction_polling', 'n')})"),
    ("  trials without a STOP", get(a, "reaction", "timeouts"), get(b, "reaction", "timeouts")),
    ("peak RSS: VmHWM (sum in b)", get(a, "end", "hwm_kib", fmt=mib), get(b, "end", "hwm_kib", fmt=mib)),
    ("RSS idle: VmRSS (sum in b)", get(a, "idle", "rss_kib", fmt=mib), get(b, "idle", "rss_kib", fmt=mib)),
    ("PSS idle (shared pages split)", get(a, "idle", "pss_kib", fmt=mib), get(b, "idle", "pss_kib", fmt=mib)),
    ("processes", get(a, "idle", "processes"), get(b, "idle", "processes")),
    ("threads", get(a, "idle", "threads"), get(b, "idle", "threads")),
    ("inotify instances (referee)", get(a, "idle", "inotify_instances"), get(b, "idle", "inotify_instances")),
    ("open fds", get(a, "idle", "fds"), get(b, "idle", "fds")),
    ("fell back to polling", get(a, "fallbacks"), get(b, "fallbacks")),
    ("idle CPU (% of one core)", get(a, "idle", "cpu_percent"), get(b, "idle", "cpu_percent")),
    ("cross-talk", get(a, "crosstalk"), get(b, "crosstalk")),
    ("shutdown after SIGTERM (s)", get(a, "shutdown", "s"), get(b, "shutdown", "s")),
    ("builds with OBSERVER-REPORT.md",
     f"{get(a, 'shutdown', 'reports')}/{a['builds'] + (1 if a.get('pickup_s') is not None else 0)}",
     "skipped" if skip else f"{get(b, 'shutdown', 'reports')}/{b['builds']}"),
    ("a new build picked up after (s)", get(a, "pickup_s"), ""),
    ("load average start → end",
     f"{get(a, 'loadavg_start', fmt=lambda v: f'{v[0]:.1f}')} → {get(a, 'loadavg_end', fmt=lambda v: f'{v[0]:.1f}')}",
     f"{get(b, 'loadavg_start', fmt=lambda v: f'{v[0]:.1f}')} → {get(b, 'loadavg_end', fmt=lambda v: f'{v[0]:.1f}')}"),
    ("CPU pressure % start → end",
     f"{get(a, 'cpu_pressure_start', 'avg10')} → {get(a, 'cpu_pressure_end', 'avg10')}",
     f"{get(b, 'cpu_pressure_start', 'avg10')} → {get(b, 'cpu_pressure_end', 'avg10')}"),
]
print()
print(f"{r['builds']} builds, {r['trials']} trials, {r['cores']} cores;"
      f" inotify instances of this user before: {a.get('user_instances_before')} of {a.get('max_user_instances')}")
print(f"{'':<34}{'one process (--root)':>24}{'per process' if not skip else 'per process (skipped)':>26}")
for label, x, y in rows:
    print(f"{label:<34}{x:>24}{'' if skip else y:>26}")
checks = []
rx = a.get("reaction", {})
if "p50_ms" in rx:
    checks.append(f"p50 ≤ 10 ms: {'ok' if rx['p50_ms'] <= 10 else 'MISSED'}")
    checks.append(f"p99 ≤ 50 ms: {'ok' if rx['p99_ms'] <= 50 else 'MISSED'}")
else:
    checks.append("reaction: NO SAMPLES")
checks.append(f"peak RSS ≤ 200 MB: {'ok' if a['end']['hwm_kib'] * 1024 <= 200e6 else 'MISSED'}")
checks.append(f"cross-talk 0: {'ok' if a['crosstalk'] == 0 else 'MISSED'}")
checks.append(f"every report: {'ok' if not a['shutdown']['reports_missing'] else 'MISSED'}")
print("targets of --root: " + "; ".join(checks))
for side, d in (("one process", a), ("per process", b)):
    for e in d.get("stderr", [])[:5]:
        print(f"  {side} stderr ×{e['count']}: {e['line'][:150]}")
EOF

# ---- (a') one process, STORM builds in a file storm -----------------------------------------
if [ "$STORM" -ge 1 ]; then
    echo "(a') one process, a storm in the first $STORM build(s) …"
    make_builds "$WORK/root-s"
    run root "$WORK/root-s" "$WORK/s.json" --storm "$STORM"
    python3 - "$WORK/a.json" "$WORK/s.json" <<'EOF'
import json, sys
a, s = (json.load(open(p)) for p in sys.argv[1:])
r = lambda d, k: d.get("reaction", {}).get(k, float("nan"))
print(f"\nthe other builds' STOP without (a) and with (a') a storm in {s.get('storm_builds')} build(s)"
      f" ({s.get('storm_files')} files made, {s.get('storm_files_per_s')}/s;"
      f" storms still running at the end: {s.get('storm_alive_at_end')}/{s.get('storm_builds')}):")
with_storm = "(a') storm"
print(f"  {'':<6}{'(a) no storm':>14}{with_storm:>14}{'ratio':>8}")
for k in ("p50_ms", "p99_ms", "mean_ms", "max_ms"):
    q, t = r(a, k), r(s, k)
    print(f"  {k[:-3]:<6}{q:11.1f} ms{t:11.1f} ms{t / q if q else float('nan'):7.2f}×")
print(f"  trials without a STOP: {r(a, 'timeouts')} vs {r(s, 'timeouts')};"
      f" cross-talk {a.get('crosstalk')} vs {s.get('crosstalk')}")
print(f"  peak RSS (VmHWM): {a['end']['hwm_kib'] / 1024:.1f} vs {s['end']['hwm_kib'] / 1024:.1f} MiB;"
      f" load average at the end {a['loadavg_end'][0]:.1f} vs {s['loadavg_end'][0]:.1f}")
EOF
fi
