#!/usr/bin/env python3
"""An orchestrator that obeys the referee, in Python (standard library only, 3.8+).

    REFEREE=/path/to/referee python3 examples/orchestrator/orchestrator.py BUILD_DIR

The same contract as orchestrator.sh beside it:

1. Before Phase 0 it starts `referee watch BUILD_DIR --exit-with PID` (PID: this process, so
   the referee finishes by itself if the orchestrator dies) and waits until
   `referee status --require-live --show-run` says this very referee is watching.
2. It runs the phases. Here each phase "runs its agents" by replaying that phase's part of a
   recorded D10 run (`referee replay demo`, whose gate results arrive with one entry typed in by
   hand); a real orchestrator spawns its agents at the same place.
3. At every phase transition it asks `referee status BUILD_DIR --sync --require-live`, which
   first waits until the referee has judged every file the phase wrote (a barrier queued behind
   the phase's own file events), then answers:
     0  go: the next phase starts;
     1  STOP: the pipeline halts there. The STOP file is printed; when the phase has a re-run (the
        demo's gate runner) and RERUNS allows another, it re-runs it and asks again, and goes on
        once the STOP is gone. Otherwise it ends the pipeline: exit 1;
     3  no live referee: nothing watches the pipeline, so it must not go on: exit 3, loudly.
4. After the last phase it waits for the referee's final report and exits with its verdict.

Environment: REFEREE (default `referee` on PATH), TIMELINE (default `demo`), RERUNS (default 1),
REFEREE_HEARTBEAT (default 0.5), REFEREE_WATCH_ARGS (split on spaces), STOP_WAIT (default 30),
SYNC_WAIT (default 30), FINISH_WAIT (default 30), as in orchestrator.sh.

Exit: 0 pipeline complete and no standing BLOCKING failure; 1 halted at a STOP (or the referee's
final verdict is 1); 2 could not run; 3 no live referee at a transition. The referee's own lines
go to stderr; this script's lines (`orchestrator: ...`) to stdout.
"""

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List, NamedTuple, Optional, Tuple

GO, STOP, NOT_LIVE = 0, 1, 3

# How long `status --sync` may wait for the referee to catch up before it says "no live referee".
SYNC_WAIT = os.environ.get("SYNC_WAIT", "30")


class Phase(NamedTuple):
    """A phase of the demo run: the part of the timeline it plays, and the part that re-runs it
    after a STOP (None: no re-run, a STOP halts the pipeline)."""

    name: str
    play: Tuple[str, str]
    rerun: Optional[Tuple[str, str]] = None


PHASES = [
    Phase("0", ("0s", "1.2s")),
    Phase("1", ("1.2s", "2.4s")),
    Phase("2", ("2.4s", "4.2s")),
    Phase("3A", ("4.2s", "10.2s"), rerun=("10.2s", "10.8s")),
    Phase("3B", ("10.8s", "14s")),
    Phase("3C", ("14s", "1h")),
]


class Halt(Exception):
    """Ends the pipeline with an exit code."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def say(message: str) -> None:
    print(f"orchestrator: {message}", flush=True)


class Referee:
    """The referee process this orchestrator started, and the questions it asks it."""

    def __init__(self, binary: str, build_dir: Path, heartbeat: float, extra: List[str]):
        self.binary = binary
        self.build_dir = build_dir
        self.heartbeat = heartbeat
        # Its lines go to stderr: stdout is this script's account of the run.
        self.proc = subprocess.Popen(
            [binary, "watch", str(build_dir), "--exit-with", str(os.getpid()),
             "--heartbeat", str(heartbeat), *extra],
            stdout=sys.stderr,
        )

    def status(self, *extra: str) -> Tuple[int, str, str]:
        """`referee status --require-live`: (exit code, stdout, stderr)."""
        r = subprocess.run(
            [self.binary, "status", str(self.build_dir), "--require-live", *extra],
            capture_output=True, text=True, check=False,
        )
        return r.returncode, r.stdout, r.stderr

    def wait_started(self, within: float = 10.0) -> None:
        """Until `status` answers for this very referee (its run record names our child's pid);
        a referee that exits meanwhile could not start. "Not 3" alone is not enough: a STOP
        left by a previous run in the same directory is reported (exit 1) before the new referee
        has looked at the directory."""
        ours = "run: pid %d " % self.proc.pid
        deadline = time.monotonic() + within
        while time.monotonic() < deadline and self.proc.poll() is None:
            code, out, _ = self.status("--show-run")
            if code != NOT_LIVE and ours in out:
                return
            time.sleep(0.1)
        code = self.stop()
        raise Halt(2, f"the referee did not start (exit {code}); see its message above")

    def ask(self) -> Tuple[int, str, str]:
        """`status --sync`: the answer is about everything written before the call. `status`
        waits until the referee has judged it (and nothing is held back while a file settles),
        so a `go` never runs ahead of the referee; a referee that cannot catch up within
        SYNC_WAIT is no live referee (3)."""
        return self.status("--sync", "--wait", SYNC_WAIT)

    def finish(self, within: float) -> int:
        """Once the pipeline is complete the referee finishes by itself; waits for that."""
        try:
            return self.proc.wait(timeout=within)
        except subprocess.TimeoutExpired:
            return self.stop()

    def stop(self) -> int:
        """Ends the referee (it writes its report at SIGTERM) and waits for it, so that once the
        orchestrator has exited the referee's files are final."""
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait()


def play(referee: Referee, timeline: str, window: Tuple[str, str]) -> None:
    """Plays part of the recorded run into the build directory: a phase's agents at work."""
    start, until = window
    r = subprocess.run(
        [referee.binary, "replay", timeline, str(referee.build_dir),
         "--from", start, "--until", until, "--speed", "0", "--quiet"],
        check=False,
    )
    if r.returncode != 0:
        raise Halt(2, f"the replay of {timeline} from {start} to {until} failed (exit {r.returncode})")


def transition(referee: Referee, timeline: str, previous: Optional[Phase], nxt: Phase,
               reruns: int, stop_wait: float) -> None:
    """Returns when the referee lets the pipeline go from `previous` to `nxt`; raises Halt
    otherwise."""
    before = previous.name if previous else "start"
    code, out, err = referee.ask()
    while code == STOP:
        say(f"STOP at the transition {before} -> {nxt.name}: the pipeline waits. The referee says:")
        for line in out.splitlines():
            print(f"    {line}", flush=True)
        if previous is None or previous.rerun is None or reruns <= 0:
            ref = referee.stop()
            say(f"pipeline HALTED at the STOP before phase {nxt.name}; the referee exited {ref}; "
                f"report: {referee.build_dir / 'OBSERVER-REPORT.md'}")
            raise Halt(1, "")
        reruns -= 1
        say(f"re-running phase {before} to fix it")
        play(referee, timeline, previous.rerun)
        # The STOP may take a moment to lift: the referee holds it while files settle.
        deadline = time.monotonic() + stop_wait
        code, out, err = referee.ask()
        while code == STOP and time.monotonic() < deadline:
            code, out, err = referee.ask()
        if code == GO:
            say(f"STOP cleared after the re-run of phase {before}")
    if code == NOT_LIVE:
        sys.stderr.write(err)
        referee.stop()
        say(f"pipeline HALTED before phase {nxt.name}: no live referee")
        raise Halt(3, f"no live referee watches {referee.build_dir} at the transition before "
                      f"phase {nxt.name}; nothing may run unwatched")
    if code != GO:
        sys.stderr.write(err)
        raise Halt(2, f"referee status failed (exit {code})")


def run(build_dir: Path) -> int:
    binary = os.environ.get("REFEREE", "referee")
    timeline = os.environ.get("TIMELINE", "demo")
    reruns = int(os.environ.get("RERUNS", "1"))
    heartbeat = float(os.environ.get("REFEREE_HEARTBEAT", "0.5"))
    extra = shlex.split(os.environ.get("REFEREE_WATCH_ARGS", ""))
    stop_wait = float(os.environ.get("STOP_WAIT", "30"))
    finish_wait = float(os.environ.get("FINISH_WAIT", "30"))

    build_dir.mkdir(parents=True, exist_ok=True)
    referee = Referee(binary, build_dir, heartbeat, extra)
    try:
        say(f"referee started (pid {referee.proc.pid}), watching {build_dir}")
        referee.wait_started()
        previous = None
        for phase in PHASES:
            transition(referee, timeline, previous, phase, reruns, stop_wait)
            say(f"phase {phase.name} starts")
            play(referee, timeline, phase.play)
            say(f"phase {phase.name} done")
            previous = phase
        code = referee.finish(finish_wait)
        say(f"pipeline complete; the referee exited {code}; "
            f"report: {build_dir / 'OBSERVER-REPORT.md'}")
        return code
    finally:
        # Whatever ends the pipeline (a halt, an error, Ctrl-C) ends the referee with it.
        referee.stop()


def main() -> int:
    if len(sys.argv) != 2:
        print(f"orchestrator: error: usage: {sys.argv[0]} BUILD_DIR", file=sys.stderr)
        return 2
    # SIGTERM unwinds like Ctrl-C, so the referee is ended and its report written.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return run(Path(sys.argv[1]))
    except Halt as h:
        if str(h):
            print(f"orchestrator: error: {h}", file=sys.stderr)
        return h.code
    except (OSError, ValueError) as e:
        print(f"orchestrator: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
