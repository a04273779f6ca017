#!/usr/bin/env bash
# An orchestrator that obeys the referee, in bash: the whole integration a pipeline needs.
#
#   REFEREE=/path/to/referee examples/orchestrator/orchestrator.sh BUILD_DIR
#
# 1. Before Phase 0 it starts `referee watch BUILD_DIR --exit-with $$` (the referee finishes
#    by itself if this script dies) and waits until `referee status --require-live --show-run`
#    says this very referee is watching.
# 2. It runs the phases. Here each phase "runs its agents" by replaying that phase's part of a
#    recorded D10 run (`referee replay demo`, whose gate results arrive with one entry typed in by
#    hand); a real orchestrator spawns its agents at the same place.
# 3. At every phase transition it asks `referee status BUILD_DIR --sync --require-live`, which
#    first waits until the referee has judged every file the phase wrote (a barrier queued behind
#    the phase's own file events), then answers:
#      0  go: the next phase starts;
#      1  STOP: the pipeline halts there. The STOP file is printed; when the phase has a re-run
#         (the demo's gate runner) and RERUNS allows another, it re-runs it and asks again, and
#         goes on once the STOP is gone. Otherwise it ends the pipeline: exit 1;
#      3  no live referee: nothing watches the pipeline, so it must not go on: exit 3, loudly.
# 4. After the last phase it waits for the referee's final report and exits with its verdict.
#
# Environment:
#   REFEREE              the referee binary (default: `referee` on PATH)
#   TIMELINE             the recorded run to replay (default: the embedded `demo`)
#   RERUNS               re-runs allowed per phase after a STOP (default: 1; 0 halts at once)
#   REFEREE_HEARTBEAT    seconds between the referee's heartbeats (default: 0.5)
#   REFEREE_WATCH_ARGS   more arguments for `referee watch` (split on spaces)
#   STOP_WAIT            seconds to wait for a re-run to clear a STOP (default: 30)
#   SYNC_WAIT            seconds `status --sync` may wait for the referee to catch up (default: 30)
#   FINISH_WAIT          whole seconds to wait for the final report after the last phase (default: 30)
#
# Exit: 0 pipeline complete and the referee found no standing BLOCKING failure; 1 halted at a
# STOP (or the referee's final verdict is 1); 2 could not run (usage, the referee would not start,
# a phase failed); 3 no live referee at a transition. The referee's own lines go to stderr; this
# script's lines (`orchestrator: ...`) to stdout.

set -euo pipefail

REFEREE=${REFEREE:-referee}
TIMELINE=${TIMELINE:-demo}
RERUNS=${RERUNS:-1}
REFEREE_HEARTBEAT=${REFEREE_HEARTBEAT:-0.5}
STOP_WAIT=${STOP_WAIT:-30}
SYNC_WAIT=${SYNC_WAIT:-30}
FINISH_WAIT=${FINISH_WAIT:-30}

# The phases of the demo run: name, then the part of the timeline it plays (`--from`, `--until`),
# then the part that re-runs it after a STOP (empty: no re-run, a STOP halts the pipeline).
PHASES=(
	"0|0s|1.2s|"
	"1|1.2s|2.4s|"
	"2|2.4s|4.2s|"
	"3A|4.2s|10.2s|10.2s 10.8s"
	"3B|10.8s|14s|"
	"3C|14s|1h|"
)

say() { printf 'orchestrator: %s\n' "$*"; }
die() {
	local code=$1
	shift
	printf 'orchestrator: error: %s\n' "$*" >&2
	exit "$code"
}

[[ $# -eq 1 ]] || die 2 "usage: $0 BUILD_DIR"
BUILD_DIR=$1
mkdir -p -- "$BUILD_DIR"
HEARTBEAT_FILE=$BUILD_DIR/OBSERVER-HEARTBEAT.json

# Ends the referee (it writes its report at SIGTERM) and waits for it, so that once this script
# has exited the referee's files are final. Sets REFEREE_CODE to the referee's exit status.
REFEREE_PID=
REFEREE_CODE=
stop_referee() {
	[[ -n $REFEREE_PID ]] || return 0
	kill -TERM "$REFEREE_PID" 2>/dev/null || true
	REFEREE_CODE=0
	wait "$REFEREE_PID" || REFEREE_CODE=$?
	REFEREE_PID=
}
ERR_FILE=$(mktemp)
# Whatever ends this script (an error, Ctrl-C) ends the referee with it.
trap 'stop_referee; rm -f -- "$ERR_FILE"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Asks the referee at a transition: sets STATUS_CODE (0 go, 1 STOP, 3 no live referee, else a
# fault), STATUS_OUT (`go` or the STOP file) and its message in ERR_FILE. `--sync` makes the answer
# about everything written before the call: `status` waits until the referee has judged it (and
# nothing is held back while a file settles), so a `go` never runs ahead of the referee; a referee
# that cannot catch up within SYNC_WAIT is no live referee (3).
ask() {
	STATUS_CODE=0
	STATUS_OUT=$("$REFEREE" status "$BUILD_DIR" --sync --wait "$SYNC_WAIT" --require-live 2>"$ERR_FILE") ||
		STATUS_CODE=$?
}

# Plays part of the recorded run into the build directory: a phase's agents at work.
play() {
	"$REFEREE" replay "$TIMELINE" "$BUILD_DIR" --from "$1" --until "$2" --speed 0 --quiet ||
		die 2 "the replay of $TIMELINE from $1 to $2 failed"
}

halt() {
	stop_referee
	say "pipeline HALTED at the STOP before phase $1; the referee exited $REFEREE_CODE; report: $BUILD_DIR/OBSERVER-REPORT.md"
	exit 1
}

no_referee() {
	stop_referee
	say "pipeline HALTED before phase $1: no live referee"
	die 3 "no live referee watches $BUILD_DIR at the transition before phase $1; nothing may run unwatched"
}

# --- 1. The referee, before Phase 0 -------------------------------------------------------------

read -r -a watch_args <<<"${REFEREE_WATCH_ARGS:-}"
# Its lines go to stderr: stdout is this script's account of the run.
"$REFEREE" watch "$BUILD_DIR" --exit-with $$ --heartbeat "$REFEREE_HEARTBEAT" \
	${watch_args[@]+"${watch_args[@]}"} >&2 &
REFEREE_PID=$!
say "referee started (pid $REFEREE_PID), watching $BUILD_DIR"

# It needs a moment to write its first heartbeat; a referee that exits meanwhile could not start.
started=0
for _ in $(seq 1 100); do
	if ! kill -0 "$REFEREE_PID" 2>/dev/null; then
		break
	fi
	# Up once `status` answers for this very referee (its run record names its pid): "not 3"
	# alone is not enough, as a STOP left by a previous run in the same directory is reported
	# (exit 1) before the new referee has looked at the directory.
	code=0
	out=$("$REFEREE" status "$BUILD_DIR" --require-live --show-run 2>/dev/null) || code=$?
	if [[ $code -ne 3 && $out == *"run: pid $REFEREE_PID "* ]]; then
		started=1
		break
	fi
	sleep 0.1
done
if ((started == 0)); then
	stop_referee
	die 2 "the referee did not start (exit ${REFEREE_CODE:-?}); see its message above"
fi

# --- 2 and 3. The phases, each behind a transition the referee allows --------------------------

# The transition from phase $1 to phase $2; $3: the part of the timeline that re-runs phase $1.
# Returns when the referee says go; halts the pipeline otherwise.
transition() {
	local reruns_left=$RERUNS deadline rerun_from rerun_until
	ask
	while ((STATUS_CODE == 1)); do
		say "STOP at the transition $1 -> $2: the pipeline waits. The referee says:"
		printf '%s\n' "$STATUS_OUT" | sed 's/^/    /'
		if [[ -z $3 ]] || ((reruns_left <= 0)); then
			halt "$2"
		fi
		reruns_left=$((reruns_left - 1))
		say "re-running phase $1 to fix it"
		read -r rerun_from rerun_until <<<"$3"
		play "$rerun_from" "$rerun_until"
		# The STOP may take a moment to lift: the referee holds it while files settle.
		deadline=$((SECONDS + STOP_WAIT))
		ask
		while ((STATUS_CODE == 1 && SECONDS < deadline)); do
			ask
		done
		if ((STATUS_CODE == 0)); then
			say "STOP cleared after the re-run of phase $1"
		fi
	done
	case $STATUS_CODE in
	0) ;;
	3)
		cat "$ERR_FILE" >&2
		no_referee "$2"
		;;
	*)
		cat "$ERR_FILE" >&2
		die 2 "referee status failed (exit $STATUS_CODE)"
		;;
	esac
}

previous=start
previous_rerun=
for phase in "${PHASES[@]}"; do
	IFS='|' read -r name from until rerun <<<"$phase"
	transition "$previous" "$name" "$previous_rerun"
	say "phase $name starts"
	play "$from" "$until"
	say "phase $name done"
	previous=$name
	previous_rerun=$rerun
done

# --- 4. The end: the referee sees the verdict, writes its report and exits ---------------------------

# The referee finishes by itself once the pipeline is complete; its heartbeat then says so.
for _ in $(seq 1 $((FINISH_WAIT * 10))); do
	grep -q '"state": *"finished"' "$HEARTBEAT_FILE" 2>/dev/null && break
	sleep 0.1
done
stop_referee
say "pipeline complete; the referee exited $REFEREE_CODE; report: $BUILD_DIR/OBSERVER-REPORT.md"
exit "$REFEREE_CODE"
