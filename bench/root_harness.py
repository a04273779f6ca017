#!/usr/bin/env python3
"""Many-builds harness for bench/root.sh (python3 standard library only; Linux).

Referees every build directory under ROOT, either with one `referee watch --root ROOT` process
(mode `root`) or with one `referee watch DIR` process per build (mode `per-process`), and measures:

  startup     from the first spawn until every build has OBSERVER-HEARTBEAT.json and
              OBSERVER-PASS-2.md (the builds are at pass 2).
  idle        after startup: VmRSS, VmHWM, threads, inotify instances of the referee(s); CPU time
              used over IDLE seconds; in per-process mode, how many processes fell back to polling
              (their stderr says "falling back to polling").
  reaction    TRIALS builds drawn with random.Random(SEED) (distinct; WARMUP more are run first and
              not counted): BAD is copied to a temp file inside the build, the monotonic clock
              starts, the temp file is renamed to p3a-gate-results.json, the clock stops when
              OBSERVER-STOP.md is created (or renamed into place) in that build. Reset: GOOD is
              renamed in the same way and the STOP must go before the next trial.
  cross-talk  a STOP created in any build but the trial's target (seen by inotify at any time),
              plus, while the target's STOP stands, every other build that has a STOP file
              (stat of all of them). Each counts one.
  pickup      (root mode) a new build renamed into ROOT: time until its heartbeat appears.
  shutdown    SIGTERM to the referee(s) → all exited; every build must have OBSERVER-REPORT.md.

Every reaction is observed through ONE inotify instance of the harness watching every build
directory (never by polling); it is made before any referee starts, so in per-process mode the
harness holds one of the user's inotify instances (max_user_instances) and the referees the rest.
The instance's queue overflowing is counted (figures after it rest on stat()).

Prints one JSON object. The referee processes are killed (SIGTERM, then SIGKILL) on any exit; their
PIDs are also written to --pids so the calling script can kill them if this harness dies.
"""

import argparse
import ctypes
import json
import os
import random
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import time

IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
APPEAR = IN_CREATE | IN_MOVED_TO
GO = IN_DELETE | IN_MOVED_FROM

STOP = "OBSERVER-STOP.md"
HEARTBEAT = "OBSERVER-HEARTBEAT.json"
PASS2 = "OBSERVER-PASS-2.md"
REPORT = "OBSERVER-REPORT.md"
TARGET = "p3a-gate-results.json"
TEMP = ".p3a-gate-results.json.bench"
FALLBACK = "falling back to polling"

_libc = ctypes.CDLL("libc.so.6", use_errno=True)
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"  [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Watcher:
    """One inotify instance watching many build directories; tracks what appears and goes."""

    def __init__(self):
        self.fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.wd = {}  # wd → build index
        self.overflows = 0
        self.handlers = []  # called as h(index, name, mask, now)

    def add(self, index, path):
        wd = _libc.inotify_add_watch(self.fd, os.fsencode(path), APPEAR | GO)
        if wd < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")
        self.wd[wd] = index

    def pump(self, timeout):
        """Reads and dispatches events; waits up to `timeout` s for the first batch. Returns True
        when something was read."""
        import select

        ready, _, _ = select.select([self.fd], [], [], max(timeout, 0))
        if not ready:
            return False
        now = time.perf_counter()
        got = False
        while True:
            try:
                buf = os.read(self.fd, 1 << 18)
            except BlockingIOError:
                return got
            got = True
            off = 0
            while off + 16 <= len(buf):
                wd, mask, _cookie, nlen = struct.unpack_from("iIII", buf, off)
                name = buf[off + 16 : off + 16 + nlen].rstrip(b"\0").decode(errors="replace")
                off += 16 + nlen
                if mask & IN_Q_OVERFLOW:
                    self.overflows += 1
                    continue
                if mask & IN_IGNORED or wd not in self.wd:
                    continue
                for h in self.handlers:
                    h(self.wd[wd], name, mask, now)

    def wait_until(self, done, timeout):
        """Pumps until done() is true or `timeout` s pass; returns done()."""
        deadline = time.perf_counter() + timeout
        while not done():
            left = deadline - time.perf_counter()
            if left <= 0:
                return done()
            self.pump(min(left, 0.5))
        return True


# ---- /proc ---------------------------------------------------------------------------------------


def status(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "Threads"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def pss(pid):
    """Proportional set size (shared pages split between their users), KiB."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def inotify_fds(pid):
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify":
                    n += 1
            except OSError:
                pass
    except OSError:
        pass
    return n


def cpu_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return 0


def user_inotify_instances(exclude=()):
    """inotify instances held by processes of this user (that /proc lets us see)."""
    uid, total = os.getuid(), 0
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) in exclude:
            continue
        try:
            if os.stat(f"/proc/{p}").st_uid != uid:
                continue
        except OSError:
            continue
        total += inotify_fds(p)
    return total


def read_int(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def cpu_pressure():
    """/proc/pressure/cpu "some" avg10 and avg60: the share of time runnable tasks waited for a CPU."""
    try:
        with open("/proc/pressure/cpu") as f:
            some = f.readline().split()
        return {k: float(v) for k, v in (x.split("=") for x in some[1:3])}
    except (OSError, ValueError, IndexError):
        return None


def pct(samples, q):
    s = sorted(samples)
    if len(s) == 1:
        return s[0]
    return statistics.quantiles(s, n=100, method="inclusive")[q - 1]


def summarise(samples):
    if not samples:
        return {"n": 0}
    return {
        "n": len(samples),
        "p50_ms": round(statistics.median(samples), 3),
        "p99_ms": round(pct(samples, 99), 3),
        "mean_ms": round(statistics.fmean(samples), 3),
        "min_ms": round(min(samples), 3),
        "max_ms": round(max(samples), 3),
    }


# ---- the run -------------------------------------------------------------------------------------


class Bench:
    def __init__(self, a):
        self.a = a
        self.root = os.path.abspath(a.root)
        self.names = sorted(
            e.name for e in os.scandir(self.root) if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
        )
        self.dirs = [os.path.join(self.root, n) for n in self.names]
        self.procs = []  # (Popen, log path, build index or None)
        self.seen = {}  # (index, name) → first time it appeared
        self.stop_events = []  # (index, "appear"|"go", time)
        self.out = {"mode": a.mode, "builds": len(self.dirs)}

    # -- processes --

    def spawn(self, argv, logpath, index):
        with open(logpath, "wb") as err:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        self.procs.append((p, logpath, index))
        if self.a.pids:
            with open(self.a.pids, "a") as f:
                f.write(f"{p.pid}\n")
        return p

    def alive(self):
        return [p for p, _, _ in self.procs if p.poll() is None]

    def kill_all(self):
        live = self.alive()
        for p in live:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + 10
        for p in live:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def sample_procs(self):
        st = [status(p.pid) for p in self.alive()]
        return {
            "processes": len(st),
            "rss_kib": sum(s.get("VmRSS", 0) for s in st),
            "hwm_kib": sum(s.get("VmHWM", 0) for s in st),
            "max_hwm_kib": max((s.get("VmHWM", 0) for s in st), default=0),
            "pss_kib": sum(pss(p.pid) for p in self.alive()),
            "threads": sum(s.get("Threads", 0) for s in st),
            "inotify_instances": sum(inotify_fds(p.pid) for p in self.alive()),
            "fds": sum(len(os.listdir(f"/proc/{p.pid}/fd")) for p in self.alive() if os.path.isdir(f"/proc/{p.pid}/fd")),
        }

    # -- events --

    def on_event(self, index, name, mask, now):
        if mask & APPEAR:
            self.seen.setdefault((index, name), now)
        if name == STOP:
            self.stop_events.append((index, "appear" if mask & APPEAR else "go", now))

    def ready(self, index):
        return (index, HEARTBEAT) in self.seen and (index, PASS2) in self.seen

    def restat(self):
        """After an inotify overflow: what exists counts as seen now."""
        now = time.perf_counter()
        for i, d in enumerate(self.dirs):
            for n in (HEARTBEAT, PASS2):
                if os.path.exists(os.path.join(d, n)):
                    self.seen.setdefault((i, n), now)

    # -- phases --

    def run(self):
        a = self.a
        if not self.dirs:
            raise SystemExit(f"no build directories under {self.root}")
        self.out["max_user_instances"] = read_int("/proc/sys/fs/inotify/max_user_instances")
        self.out["max_user_watches"] = read_int("/proc/sys/fs/inotify/max_user_watches")
        self.out["max_queued_events"] = read_int("/proc/sys/fs/inotify/max_queued_events")
        self.out["user_instances_before"] = user_inotify_instances(exclude=(os.getpid(),))
        self.w = Watcher()
        self.w.handlers.append(self.on_event)
        for i, d in enumerate(self.dirs):
            self.w.add(i, d)
        os.makedirs(a.logs, exist_ok=True)
        self.load_start = os.getloadavg()
        self.out["cpu_pressure_start"] = cpu_pressure()

        # Startup.
        log(f"{a.mode}: starting the referee on {len(self.dirs)} builds …")
        t0 = time.perf_counter()
        if a.mode == "root":
            self.spawn([a.referee, "watch", "--root", self.root, "--quiet"], os.path.join(a.logs, "root.log"), None)
        else:
            for i, d in enumerate(self.dirs):
                self.spawn([a.referee, "watch", d, "--quiet"], os.path.join(a.logs, f"{self.names[i]}.log"), i)
                self.w.pump(0)
        t_spawned = time.perf_counter()
        n = len(self.dirs)
        ok = self.w.wait_until(lambda: self.w.overflows or all(self.ready(i) for i in range(n)), a.start_timeout)
        if self.w.overflows:
            self.restat()
            ok = self.w.wait_until(
                lambda: (self.restat(), all(self.ready(i) for i in range(n)))[1], a.start_timeout
            )
        times = [max(self.seen[(i, HEARTBEAT)], self.seen[(i, PASS2)]) - t0 for i in range(n) if self.ready(i)]
        self.out["startup"] = {
            "ready": len(times),
            "spawn_s": round(t_spawned - t0, 3),
            "all_s": round(max(times), 3) if ok and times else None,
            "first_s": round(min(times), 3) if times else None,
            "median_s": round(statistics.median(times), 3) if times else None,
            "timed_out": not ok,
        }
        log(f"{a.mode}: startup {self.out['startup']}")
        if not ok:
            missing = [self.names[i] for i in range(n) if not self.ready(i)]
            self.out["startup"]["not_ready"] = missing[:20]
        dead = [(p, lp) for p, lp, _ in self.procs if p.poll() is not None]
        self.out["died_at_start"] = len(dead)
        if dead:
            self.out["died_stderr"] = [open(lp, errors="replace").read()[-500:] for _, lp in dead[:3]]

        # Idle: memory, threads, instances, CPU.
        self.w.wait_until(lambda: False, 2.0)
        c0 = sum(cpu_ticks(p.pid) for p in self.alive())
        self.w.wait_until(lambda: False, a.idle)
        c1 = sum(cpu_ticks(p.pid) for p in self.alive())
        idle = self.sample_procs()
        idle["cpu_percent"] = round(100.0 * (c1 - c0) / CLK_TCK / a.idle, 1)
        idle["secs"] = a.idle
        self.out["idle"] = idle
        self.out["user_instances_running"] = user_inotify_instances(exclude=(os.getpid(),))
        if a.mode == "per-process":
            polling = set()
            for _, lp, i in self.procs:
                with open(lp, errors="replace") as f:
                    if FALLBACK in f.read():
                        polling.add(i)
            self.polling = polling
            self.out["fallbacks"] = len(polling)
        else:
            self.polling = set()
            with open(os.path.join(a.logs, "root.log"), errors="replace") as f:
                self.out["fallbacks"] = f.read().count(FALLBACK)
        log(f"{a.mode}: idle {idle}, fallbacks {self.out['fallbacks']}")

        self.trials()
        if a.mode == "root":
            self.pickup()
        end = self.sample_procs()
        self.out["end"] = end
        self.shutdown()
        self.out["overflows"] = self.w.overflows
        self.out["loadavg_start"] = [round(x, 2) for x in self.load_start]
        self.out["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        self.out["cpu_pressure_end"] = cpu_pressure()
        stderr = {}
        for _, lp, _ in self.procs:
            with open(lp, errors="replace") as f:
                for line in f:
                    key = re.sub(r"\d+", "N", line.strip())[:200]
                    if key:
                        stderr[key] = stderr.get(key, 0) + 1
        self.out["stderr"] = [{"count": c, "line": k} for k, c in sorted(stderr.items(), key=lambda kv: -kv[1])][:20]
        return self.out

    def trials(self):
        a = self.a
        n = len(self.dirs)
        rng = random.Random(a.seed)
        # The first --spare builds (the storming ones with --storm) are never targets: with the
        # same --spare and seed, a run with a storm and one without draw the same targets.
        spare = max(a.spare, a.storm)
        if spare >= n:
            raise SystemExit(f"--spare/--storm {spare} leaves no build to try among {n}")
        pool = range(spare, n)
        k = min(len(pool), a.trials + a.warmup)
        picks = rng.sample(pool, k)
        warm, targets = picks[: k - min(a.trials, k)], picks[k - min(a.trials, k) :]
        samples, by_kind = [], {"native": [], "polling": []}
        log(f"{a.mode}: {len(targets)} trials (+{len(warm)} warm-up) …")
        storms = [self.start_storm(j) for j in range(a.storm)]
        t0 = time.perf_counter()
        try:
            self.trial_loop(warm, targets, samples, by_kind)
        finally:
            secs = time.perf_counter() - t0
            alive = 0
            for storm in storms:
                alive += storm.poll() is None
                storm.terminate()
                storm.wait()
            if storms:
                made = sum(int(open(s.count_path).read() or 0) for s in storms)
                self.out["storm_builds"] = len(storms)
                self.out["storm_files"] = made
                self.out["storm_files_per_s"] = round(made / secs)
                # Every storm must have run through the trials (else the figures are of no storm).
                self.out["storm_alive_at_end"] = alive

    def start_storm(self, j):
        """A process creating files (half written in place, half renamed in) and removing them,
        as fast as it can, in build j's `scratch/storm/` (a subfolder no check reads: the
        harness's own watch on the build directories does not see it, the referee's recursive
        watch does)."""
        d = os.path.join(self.dirs[j], "scratch", "storm")
        os.makedirs(d, exist_ok=True)
        count_path = os.path.join(self.a.logs, f"storm-count-{j}")
        code = (
            "import os,sys,signal\n"
            "d,c=sys.argv[1],sys.argv[2]; n=0\n"
            "def done(*_):\n"
            "    open(c,'w').write(str(n)); sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, done)\n"
            "while True:\n"
            "    p=os.path.join(d,'f%d'%(n%500))\n"
            "    if n%2:\n"
            "        open(p+'.tmp','w').write('x'); os.rename(p+'.tmp',p)\n"
            "    else:\n"
            "        open(p,'w').write('x')\n"
            "    if n%500==499:\n"
            "        for i in range(500): os.unlink(os.path.join(d,'f%d'%i))\n"
            "    n+=1\n"
        )
        proc = subprocess.Popen([sys.executable, "-c", code, d, count_path])
        proc.count_path = count_path
        if self.a.pids:
            with open(self.a.pids, "a") as f:
                f.write(f"{proc.pid}\n")
        log(f"storm: pid {proc.pid} in {d}")
        return proc

    def trial_loop(self, warm, targets, samples, by_kind):
        a = self.a
        n = len(self.dirs)
        timeouts, reset_timeouts, crosstalk, crosstalk_names = 0, 0, 0, []
        for t, i in enumerate(warm + targets):
            counted = t >= len(warm)
            d = self.dirs[i]
            stop_path = os.path.join(d, STOP)
            # A quiet gap, watching for stray STOPs.
            self.w.wait_until(lambda: False, a.gap)
            before = len(self.stop_events)
            shutil.copyfile(a.bad, os.path.join(d, TEMP))
            self.w.pump(0)
            mark = len(self.stop_events)
            t0 = time.perf_counter()
            os.rename(os.path.join(d, TEMP), os.path.join(d, TARGET))
            hit = []

            def appeared():
                for j, kind, when in self.stop_events[mark:]:
                    if j == i and kind == "appear":
                        hit.append(when)
                        return True
                return False

            if self.w.wait_until(appeared, a.timeout):
                ms = (hit[0] - t0) * 1000
                if counted:
                    samples.append(ms)
                    by_kind["polling" if i in self.polling else "native"].append(ms)
            else:
                if counted:
                    timeouts += 1
                log(f"trial {t}: no STOP in {self.names[i]} within {a.timeout} s")
            # While the target's STOP stands, no other build may have one.
            others = [self.names[j] for j in range(n) if j != i and os.path.exists(os.path.join(self.dirs[j], STOP))]
            # Reset: the clean file back in, the STOP must go.
            shutil.copyfile(a.good, os.path.join(d, TEMP))
            mark2 = len(self.stop_events)
            os.rename(os.path.join(d, TEMP), os.path.join(d, TARGET))
            gone = self.w.wait_until(
                lambda: any(j == i and k == "go" for j, k, _ in self.stop_events[mark2:]) or not os.path.exists(stop_path),
                a.timeout,
            )
            if not gone:
                reset_timeouts += 1
                log(f"trial {t}: the STOP in {self.names[i]} did not go within {a.timeout} s")
            stray = [self.names[j] for j, kind, _ in self.stop_events[before:] if j != i and kind == "appear"]
            bad = sorted(set(others) | set(stray))
            if bad:
                crosstalk += len(bad)
                crosstalk_names.append({"target": self.names[i], "others": bad[:10]})
                log(f"trial {t}: CROSS-TALK: target {self.names[i]}, STOP also in {bad[:10]}")
        # At the end: no STOP anywhere.
        leftover = [self.names[j] for j in range(n) if os.path.exists(os.path.join(self.dirs[j], STOP))]
        self.out["reaction"] = summarise(samples)
        self.out["reaction"].update(timeouts=timeouts, reset_timeouts=reset_timeouts, trials=len(targets), seed=a.seed)
        if self.a.mode == "per-process":
            self.out["reaction_native"] = summarise(by_kind["native"])
            self.out["reaction_polling"] = summarise(by_kind["polling"])
        self.out["crosstalk"] = crosstalk
        self.out["crosstalk_detail"] = crosstalk_names[:10]
        self.out["stop_left_at_end"] = leftover[:20]
        self.out["samples_ms"] = [round(s, 3) for s in samples]
        log(f"{a.mode}: reaction {self.out['reaction']}, cross-talk {crosstalk}")

    def pickup(self):
        """A new build renamed into the root: until its heartbeat and PASS-2 appear."""
        if not self.a.template:
            return
        tmp = os.path.join(self.root, ".new-build.tmp")
        shutil.copytree(self.a.template, tmp, symlinks=True)
        i = len(self.dirs)
        self.names.append("new-build")
        self.dirs.append(os.path.join(self.root, "new-build"))
        self.w.add(i, tmp)  # the watch follows the directory through the rename
        t0 = time.perf_counter()
        os.rename(tmp, self.dirs[i])
        ok = self.w.wait_until(lambda: self.ready(i), 15)
        self.out["pickup_s"] = round(max(self.seen[(i, HEARTBEAT)], self.seen[(i, PASS2)]) - t0, 3) if ok else None
        log(f"root: a new build picked up after {self.out['pickup_s']} s")

    def shutdown(self):
        live = self.alive()
        t0 = time.perf_counter()
        for p in live:
            p.send_signal(signal.SIGTERM)
        codes = {}
        deadline = t0 + self.a.stop_timeout
        for p in live:
            try:
                c = p.wait(timeout=max(0.1, deadline - time.perf_counter()))
            except subprocess.TimeoutExpired:
                c = "timeout"
            codes[str(c)] = codes.get(str(c), 0) + 1
        t1 = time.perf_counter()
        missing = [self.names[j] for j, d in enumerate(self.dirs) if not os.path.exists(os.path.join(d, REPORT))]
        self.out["shutdown"] = {
            "s": round(t1 - t0, 3),
            "exit_codes": codes,
            "reports": len(self.dirs) - len(missing),
            "reports_missing": missing[:20],
        }
        log(f"{self.a.mode}: shutdown {self.out['shutdown']}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=("root", "per-process"))
    p.add_argument("--referee", required=True)
    p.add_argument("--root", required=True, help="the directory holding one build per subdirectory")
    p.add_argument("--bad", required=True, help="the violating gate results")
    p.add_argument("--good", required=True, help="the clean gate results")
    p.add_argument("--logs", required=True, help="where each referee's stderr goes")
    p.add_argument("--template", help="a build to copy in as a new build after the trials (root mode)")
    p.add_argument("--pids", help="append each spawned PID to this file")
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--storm", type=int, default=0,
                   help="this many of the first builds get a process creating and removing files throughout the trials")
    p.add_argument("--spare", type=int, default=0,
                   help="the first SPARE builds are never targets (to draw the same targets as a run with --storm)")
    p.add_argument("--gap", type=float, default=0.1, help="quiet seconds before each trial")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds a trial waits for the STOP")
    p.add_argument("--idle", type=float, default=5.0, help="seconds of idle CPU measurement")
    p.add_argument("--start-timeout", type=float, default=120.0)
    p.add_argument("--stop-timeout", type=float, default=60.0)
    a = p.parse_args()

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    b = Bench(a)
    try:
        out = b.run()
    except KeyboardInterrupt as e:
        print(f"root_harness.py: interrupted ({e}); the referees are stopped", file=sys.stderr)
        sys.exit(130)
    finally:
        b.kill_all()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
