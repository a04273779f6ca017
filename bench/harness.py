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

Prints one JSON object: {"name", "trials", "ok", "timeouts", "p50_ms", "p99_ms", "mean_ms",
"min_ms", "max_ms"}.
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


TEMP_DIR = None


def place(src, directory, target):
    """Copies `src` to a temp name beside the target (or in --temp-dir, which must be on the same
    filesystem); returns a function that renames it into place."""
    tmp = os.path.join(TEMP_DIR or directory, f".{target}.bench")
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


def run_stop(a):
    ino = Inotify(a.dir, IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM)
    samples, timeouts = [], 0
    stop_path = os.path.join(a.dir, STOP)
    for i in range(a.trials + a.warmup):
        # Reset: the clean file in place and no STOP.
        if os.path.exists(stop_path):
            ino.drain()
            place(a.good, a.dir, a.target)()
            if ino.wait_for(STOP, IN_DELETE | IN_MOVED_FROM, a.timeout) is None and os.path.exists(stop_path):
                print(f"trial {i}: STOP did not go away after the reset", file=sys.stderr)
                timeouts += 1
                continue
        time.sleep(a.gap)
        rename = place(a.bad, a.dir, a.target)
        ino.drain()
        t0 = time.perf_counter()
        rename()
        t1 = ino.wait_for(STOP, IN_CREATE | IN_MOVED_TO, a.timeout)
        if t1 is None:
            timeouts += 1
            print(f"trial {i}: no STOP within {a.timeout}s", file=sys.stderr)
        elif i >= a.warmup:
            samples.append((t1 - t0) * 1000)
    # Leave the directory clean.
    place(a.good, a.dir, a.target)()
    ino.wait_for(STOP, IN_DELETE | IN_MOVED_FROM, a.timeout)
    return summarise(a.name or "stop", samples, timeouts, a.trials)


def run_inotifywait(a):
    proc = subprocess.Popen(
        ["inotifywait", "-m", "-q", "-e", "moved_to", "--format", "%f", a.dir],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
    )
    samples, timeouts = [], 0
    try:
        # inotifywait prints "Watches established." on stderr only without -q; give it a moment.
        time.sleep(0.3)
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        pending = b""
        for i in range(a.trials + a.warmup):
            time.sleep(a.gap)
            rename = place(a.good, a.dir, a.target)
            t0 = time.perf_counter()
            rename()
            t1 = None
            deadline = t0 + a.timeout
            while t1 is None:
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
                ready, _, _ = select.select([fd], [], [], left)
                if not ready:
                    break
                now = time.perf_counter()
                try:
                    pending += os.read(fd, 4096)
                except BlockingIOError:
                    continue
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    if line.decode(errors="replace") == a.target:
                        t1 = now
            if t1 is None:
                timeouts += 1
            elif i >= a.warmup:
                samples.append((t1 - t0) * 1000)
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    return summarise(a.name or "inotifywait", samples, timeouts, a.trials)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    for mode in ("stop", "inotifywait"):
        s = sub.add_parser(mode)
        s.add_argument("dir")
        if mode == "stop":
            s.add_argument("bad")
        s.add_argument("good")
        s.add_argument("--trials", type=int, default=100)
        s.add_argument("--warmup", type=int, default=3)
        s.add_argument("--target", default="p3a-gate-results.json")
        s.add_argument("--timeout", type=float, default=5.0)
        s.add_argument("--gap", type=float, default=0.1, help="quiet seconds before each trial")
        s.add_argument("--name")
        s.add_argument("--temp-dir", help="write the temp file here instead of beside the target")
    a = p.parse_args()
    global TEMP_DIR
    TEMP_DIR = a.temp_dir
    result = run_stop(a) if a.mode == "stop" else run_inotifywait(a)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
