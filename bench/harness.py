#!/usr/bin/env python3
"""Latency harness for bench/latency.sh (python3 standard library only; Linux).

Times, with a monotonic clock, how long after a file is renamed into a watched build directory
something reacts. Reactions are observed through inotify on the directory (never by polling), so
the measurement adds only the kernel's event delivery to what it measures.

  harness.py stop DIR BAD GOOD --trials N [--target NAME]
      Each trial: copy BAD to a temp file in DIR (or --temp-dir), start the clock, rename it to NAME
      (default p3a-gate-results.json), stop the clock when OBSERVER-STOP.md appears (created or
      renamed into place). Reset: rename GOOD in the same way and wait for OBSERVER-STOP.md to go.
      Works for anything that maintains a STOP file: `referee watch`, or a watchexec script.

  harness.py inotifywait DIR GOOD --trials N [--target NAME]
      The floor: an `inotifywait -m -e moved_to` process watching DIR; the clock stops when it
      prints the target's name (a separate process waking on the same rename and saying so).

  harness.py compare BAD GOOD --trials N [--stop NAME=DIR[:TEMPDIR]]... [--inotifywait NAME=DIR]...
      Several of the above side by side, each on its own directory: the trials go round-robin over
      them (the order rotated each round), so a busy machine weighs on all of them alike.

Prints one JSON object per line, per reactor: {"name", "trials", "ok", "timeouts", "p50_ms",
"p99_ms", "mean_ms", "min_ms", "max_ms"}.
"""

import argparse
import ctypes
import json
import os
import select
import shutil
import statistics
import struct
import subprocess
import sys
import time

IN_MODIFY = 0x002
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000
STOP = "OBSERVER-STOP.md"

_libc = ctypes.CDLL("libc.so.6", use_errno=True)


class Inotify:
    """One inotify instance watching one directory (non-blocking fd, read with select)."""

    def __init__(self, path, mask):
        self.fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if _libc.inotify_add_watch(self.fd, os.fsencode(path), mask) < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")

    def drain(self):
        try:
            while os.read(self.fd, 1 << 16):
                pass
        except BlockingIOError:
            pass

    def wait_for(self, name, mask, timeout):
        """Blocks until an event on `name` matching `mask`; returns its monotonic time or None."""
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return None
            now = time.perf_counter()
            try:
                buf = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                continue
            off = 0
            while off + 16 <= len(buf):
                _wd, emask, _cookie, nlen = struct.unpack_from("iIII", buf, off)
                ename = buf[off + 16 : off + 16 + nlen].rstrip(b"\0").decode(errors="replace")
                off += 16 + nlen
                if emask & IN_Q_OVERFLOW:
                    raise RuntimeError("inotify queue overflow in the harness")
                if ename == name and emask & mask:
                    return now


def place(src, directory, target, temp_dir=None):
    """Copies `src` to a temp name beside the target (or in `temp_dir`, which must be on the same
    filesystem); returns a function that renames it into place."""
    tmp = os.path.join(temp_dir or directory, f".{target}.bench")
    shutil.copyfile(src, tmp)
    dst = os.path.join(directory, target)
    return lambda: os.rename(tmp, dst)


def summarise(name, samples, timeouts, trials):
    out = {"name": name, "trials": trials, "ok": len(samples), "timeouts": timeouts}
    if samples:
        s = sorted(samples)
        q = statistics.quantiles(s, n=100, method="inclusive") if len(s) > 1 else [s[0]] * 99
        out.update(
            p50_ms=round(statistics.median(s), 3),
            p99_ms=round(q[98], 3),
            mean_ms=round(statistics.fmean(s), 3),
            min_ms=round(s[0], 3),
            max_ms=round(s[-1], 3),
        )
    return out


class StopRunner:
    """Times rename → OBSERVER-STOP.md in one directory that something keeps a STOP file for."""

    def __init__(self, name, directory, bad, good, a, temp_dir=None):
        self.name, self.dir, self.bad, self.good, self.a = name, directory, bad, good, a
        self.temp_dir = temp_dir
        self.ino = Inotify(directory, IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM)
        self.stop_path = os.path.join(directory, STOP)
        self.samples, self.timeouts = [], 0

    def _place(self, src):
        return place(src, self.dir, self.a.target, self.temp_dir)

    def trial(self, i):
        a = self.a
        # Reset: the clean file in place and no STOP.
        if os.path.exists(self.stop_path):
            self.ino.drain()
            self._place(self.good)()
            if self.ino.wait_for(STOP, IN_DELETE | IN_MOVED_FROM, a.timeout) is None and os.path.exists(
                self.stop_path
            ):
                print(f"{self.name} trial {i}: STOP did not go away after the reset", file=sys.stderr)
                self.timeouts += 1
                return
        time.sleep(a.gap)
        rename = self._place(self.bad)
        self.ino.drain()
        t0 = time.perf_counter()
        rename()
        t1 = self.ino.wait_for(STOP, IN_CREATE | IN_MOVED_TO, a.timeout)
        if t1 is None:
            self.timeouts += 1
            print(f"{self.name} trial {i}: no STOP within {a.timeout}s", file=sys.stderr)
        elif i >= a.warmup:
            self.samples.append((t1 - t0) * 1000)

    def close(self):
        # Leave the directory clean.
        self._place(self.good)()
        self.ino.wait_for(STOP, IN_DELETE | IN_MOVED_FROM, self.a.timeout)
        return summarise(self.name, self.samples, self.timeouts, self.a.trials)


class InotifywaitRunner:
    """The bare floor: an `inotifywait -m -e moved_to` process watching the directory; the clock
    stops when it prints the target's name."""

    def __init__(self, name, directory, good, a, temp_dir=None):
        self.name, self.dir, self.good, self.a, self.temp_dir = name, directory, good, a, temp_dir
        self.proc = subprocess.Popen(
            ["inotifywait", "-m", "-q", "-e", "moved_to", "--format", "%f", directory],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
        )
        # inotifywait prints "Watches established." on stderr only without -q; give it a moment.
        time.sleep(0.3)
        self.fd = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.pending = b""
        self.samples, self.timeouts = [], 0

    def trial(self, i):
        a = self.a
        time.sleep(a.gap)
        rename = place(self.good, self.dir, a.target, self.temp_dir)
        t0 = time.perf_counter()
        rename()
        t1 = None
        deadline = t0 + a.timeout
        while t1 is None:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                break
            now = time.perf_counter()
            try:
                self.pending += os.read(self.fd, 4096)
            except BlockingIOError:
                continue
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                if line.decode(errors="replace") == a.target:
                    t1 = now
        if t1 is None:
            self.timeouts += 1
        elif i >= a.warmup:
            self.samples.append((t1 - t0) * 1000)

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=5)
        return summarise(self.name, self.samples, self.timeouts, self.a.trials)


def run(runners, a):
    """Trials round-robin over the runners, the order rotated each round: every runner sees the
    same machine at nearly the same moments, so a busy neighbour skews them alike."""
    try:
        for i in range(a.trials + a.warmup):
            k = i % len(runners)
            for r in runners[k:] + runners[:k]:
                r.trial(i)
    finally:
        results = [r.close() for r in runners]
    return results


def spec(text):
    """`NAME=DIR[:TEMPDIR]` → (name, dir, temp dir or None)."""
    name, _, rest = text.partition("=")
    if not name or not rest:
        raise argparse.ArgumentTypeError(f"`{text}` is not NAME=DIR[:TEMPDIR]")
    directory, _, temp = rest.partition(":")
    return name, directory, temp or None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    for mode in ("stop", "inotifywait", "compare"):
        s = sub.add_parser(mode)
        if mode != "compare":
            s.add_argument("dir")
        if mode in ("stop", "compare"):
            s.add_argument("bad")
        s.add_argument("good")
        s.add_argument("--trials", type=int, default=100)
        s.add_argument("--warmup", type=int, default=3)
        s.add_argument("--target", default="p3a-gate-results.json")
        s.add_argument("--timeout", type=float, default=5.0)
        s.add_argument("--gap", type=float, default=0.1, help="quiet seconds before each trial")
        if mode == "compare":
            s.add_argument("--stop", type=spec, action="append", default=[], metavar="NAME=DIR[:TEMPDIR]")
            s.add_argument("--inotifywait", type=spec, action="append", default=[], metavar="NAME=DIR")
        else:
            s.add_argument("--name")
            s.add_argument("--temp-dir", help="write the temp file here instead of beside the target")
    a = p.parse_args()
    if a.mode == "stop":
        runners = [StopRunner(a.name or "stop", a.dir, a.bad, a.good, a, a.temp_dir)]
    elif a.mode == "inotifywait":
        runners = [InotifywaitRunner(a.name or "inotifywait", a.dir, a.good, a, a.temp_dir)]
    else:
        runners = [StopRunner(n, d, a.bad, a.good, a, t) for n, d, t in a.stop]
        runners += [InotifywaitRunner(n, d, a.good, a, t) for n, d, t in a.inotifywait]
        if not runners:
            p.error("compare needs at least one --stop or --inotifywait")
    for result in run(runners, a):
        print(json.dumps(result))


if __name__ == "__main__":
    main()
