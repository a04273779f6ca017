#!/usr/bin/env bash
# How long does an agent wait on `referee hook`? One run measures, side by side with hyperfine
# (warm-ups, then medians and p99), on a git workspace of FILES Python files (default 1000)
# with one clean edit, each hook in two modes: in process (`referee hook claude-code`, the
# default) and served (`referee hook claude-code --serve SOCKET`, answered by a warm
# `referee serve` started here):
#
#   stop      `referee hook claude-code` on a Stop payload: the whole workspace judged against
#             the pinned baseline as the implicit attempt (APPROVE, let through), verdict kept;
#   pre       a PreToolUse Bash `sed -i` on src/orchestrator.py: denied (no judgment, protocol only);
#   post      a PostToolUse Write of a file: the workspace judged in memory, nothing kept;
#   verify    `referee verify WS --protocol code-change` on the same workspace, for scale.
#
# The hooks' own deadline is `--timeout` (45 s by default), under the agents' 60 s in
# examples/. The referee is built with `cargo build --release` unless REFEREE names a binary.
#
#   bench/hook.sh                          # release build, 1000 files
#   REFEREE=target/debug/referee FILES=500 bench/hook.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FILES=${FILES:-1000}
RUNS=${RUNS:-100}
if [[ -z "${REFEREE:-}" ]]; then
  cargo build --release --locked >&2
  REFEREE=$PWD/target/release/referee
fi
REFEREE=$(realpath "$REFEREE")
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 2; }
WORK=$(mktemp -d)
SERVE_PID=
trap '[[ -z "$SERVE_PID" ]] || kill "$SERVE_PID"; [[ -n "${KEEP:-}" ]] || rm -rf "$WORK"' EXIT
WS=$WORK/ws
mkdir -p "$WS/src/pkg"
for i in $(seq 1 "$FILES"); do
  printf 'def f%d(x):\n    return x + %d\n' "$i" "$i" > "$WS/src/pkg/m$i.py"
done
printf "ROLES = ['worker']\n" > "$WS/src/orchestrator.py"
git -C "$WS" init -q
git -C "$WS" add -A
git -C "$WS" -c user.name=b -c user.email=b@b commit -qm base
export XDG_STATE_HOME=$WORK/state
payload() { # event, extra JSON members
  printf '{"session_id":"bench","cwd":"%s","hook_event_name":"%s"%s}' "$WS" "$1" "$2"
}
payload SessionStart '' > "$WORK/start.json"
payload Stop ',"stop_hook_active":false' > "$WORK/stop.json"
payload PreToolUse ',"tool_name":"Bash","tool_input":{"command":"sed -i s/worker/admin/ src/orchestrator.py"}' > "$WORK/pre.json"
payload PostToolUse ",\"tool_name\":\"Write\",\"tool_input\":{\"file_path\":\"$WS/src/pkg/m1.py\",\"content\":\"\"}" > "$WORK/post.json"
mkdir -p "$WORK/run"
SOCK=$WORK/run/hook.sock
"$REFEREE" serve --socket "$SOCK" --state-dir "$WORK/serve-state" 2>"$WORK/serve.log" &
SERVE_PID=$!
for _ in $(seq 1 600); do
  [[ -S "$SOCK" ]] && break
  sleep 0.05
done
[[ -S "$SOCK" ]] || { echo "referee serve did not start" >&2; cat "$WORK/serve.log" >&2; exit 2; }
"$REFEREE" hook claude-code < "$WORK/start.json"
"$REFEREE" hook claude-code --serve "$SOCK" < "$WORK/start.json"
printf 'def f1(x):\n    return x + 100\n' > "$WS/src/pkg/m1.py"
# The answers, once, as the agent reads them.
for e in stop pre post; do
  printf '%s: ' "$e"; "$REFEREE" hook claude-code < "$WORK/$e.json" | head -c 200; echo
  printf '%s served: ' "$e"; "$REFEREE" hook claude-code --serve "$SOCK" < "$WORK/$e.json" | head -c 200; echo
done
# Each payload on its own hyperfine run, in process and served, one after the other.
# (Through `sh -c … < payload`: the hyperfine of Debian bookworm has no --input; the shell's
# start, about a millisecond, is in every figure alike, verify's too.)
for e in stop pre post; do
  hyperfine --warmup 3 --runs "$RUNS" --export-json "$WORK/$e.out.json" \
    -n "$e" "$REFEREE hook claude-code < $WORK/$e.json" >/dev/null
  hyperfine --warmup 3 --runs "$RUNS" --export-json "$WORK/$e-served.out.json" \
    -n "$e served" "$REFEREE hook claude-code --serve $SOCK < $WORK/$e.json" >/dev/null
done
hyperfine --warmup 3 --runs "$RUNS" --export-json "$WORK/verify.out.json" \
  -n verify "$REFEREE verify $WS --protocol code-change" >/dev/null || true
python3 - "$WORK" "$FILES" "$RUNS" <<'PY'
import json, sys, statistics
w, files, runs = sys.argv[1], sys.argv[2], sys.argv[3]
def p99(t):
    t = sorted(t)
    return t[min(len(t) - 1, int(round(0.99 * (len(t) - 1))))]
print(f"{files} files, {runs} runs each")
print(f"{'case':14} {'median ms':>10} {'p99 ms':>8} {'min ms':>8} {'max ms':>8}")
rows = {}
for e in ["stop", "stop-served", "pre", "pre-served", "post", "post-served", "verify"]:
    r = json.load(open(f"{w}/{e}.out.json"))["results"][0]
    t = r["times"]
    rows[e] = statistics.median(t)
    print(f"{e:14} {rows[e]*1e3:10.1f} {p99(t)*1e3:8.1f} {min(t)*1e3:8.1f} {max(t)*1e3:8.1f}")
print(f"stop / verify: {rows['stop']/rows['verify']:.2f}")
PY
