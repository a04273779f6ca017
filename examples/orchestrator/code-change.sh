#!/usr/bin/env bash
# An orchestrator of coding tasks that obeys the referee (code-change protocol), in bash.
#
#   REFEREE=/path/to/referee examples/orchestrator/code-change.sh WORKSPACE WORKER TASK...
#
# WORKSPACE is a git work tree; WORKER is a command run as `WORKER TASK ATTEMPT` inside it that
# does the work and writes `.tasks/TASK.json` (status `pending_review`). For each TASK, in order:
#
# 0. it registers the tasks (`referee task open WORKSPACE TASK...`);
# 1. it runs the worker, then asks `referee status WORKSPACE --task TASK --wait 60s`:
#      0  judged good: `referee accept WORKSPACE --task TASK` moves the referee's baseline to the
#         work it judged (so the next task is measured against it, never REJECTed for it), the
#         record is set to `approved` and the work committed;
#      1  REJECT / ESCALATE, or a STOP stands: the worker gets another attempt (up to ATTEMPTS,
#         default 3; the referee escalates the third REJECT itself);
#      4  not judged (yet, or the files changed after the verdict): the same;
#      3  no live referee: it stops, loudly.
# 2. `accept` refuses (exit 1) a stale or non-approved verdict: the orchestrator never commits
#    what the referee did not judge.
#
# The referee must already watch WORKSPACE: `referee watch WORKSPACE --protocol code-change`.
# Exit: 0 every task accepted; 1 a task was not accepted; 2 could not run; 3 no live referee.
set -euo pipefail

REFEREE=${REFEREE:-referee}
ATTEMPTS=${ATTEMPTS:-3}
WAIT=${WAIT:-60s}

say() { printf 'orchestrator: %s\n' "$*"; }
die() { printf 'orchestrator: error: %s\n' "$*" >&2; exit "${2:-2}"; }

[ $# -ge 3 ] || die "usage: code-change.sh WORKSPACE WORKER TASK..."
ws=$1 worker=$2
shift 2

# The record leaves `pending_review` once the orchestrator has acted on it (temp file + rename).
settle() {
  local task=$1 status=$2 rec="$ws/.tasks/$1.json"
  python3 - "$rec" "$status" <<'PY'
import json, os, sys
path, status = sys.argv[1], sys.argv[2]
with open(path) as f:
    doc = json.load(f)
doc["status"] = status
tmp = path + ".tmp"
with open(tmp, "w") as f:
    json.dump(doc, f)
os.replace(tmp, path)
PY
}

# The tasks it assigns, registered: a record of any other task claims nothing (CC-00
# `unknown_task`), so a decoy or a renamed task excuses no change.
"$REFEREE" task open "$ws" "$@" >/dev/null || die "cannot register the tasks"

for task in "$@"; do
  accepted=no
  for attempt in $(seq 1 "$ATTEMPTS"); do
    (cd "$ws" && "$worker" "$task" "$attempt") || die "the worker failed on $task"
    set +e
    answer=$("$REFEREE" status "$ws" --task "$task" --wait "$WAIT" 2>&1)
    code=$?
    set -e
    case $code in
      0)
        "$REFEREE" accept "$ws" --task "$task" || { say "$task: accept refused"; continue; }
        settle "$task" approved
        git -C "$ws" add -A -- . ':!.tasks'
        git -C "$ws" -c user.name=orchestrator -c user.email=o@example.invalid \
          commit -q -m "$task" || true
        say "$task accepted at attempt $attempt"
        accepted=yes
        break
        ;;
      3) die "no live referee: $answer" 3 ;;
      *) say "$task attempt $attempt not accepted ($code): $answer" ;;
    esac
  done
  if [ "$accepted" != yes ]; then
    settle "$task" rejected
    say "$task was not accepted after $ATTEMPTS attempt(s): a human takes it from here"
    exit 1
  fi
done
say "every task accepted"
