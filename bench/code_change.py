#!/usr/bin/env python3
"""Latency of `referee watch WORKSPACE --protocol code-change` (python3 standard library; Linux).

Builds a git workspace of FILES files (default 1,000, in FOLDERS folders, default 20), commits
it, starts the referee on it, changes 10 files (one protected among them, every other trial:
REJECT and APPROVE alternate), and times, with a monotonic clock, from the rename of the task
record into `.tasks/` to the moment `.referee/OBSERVER-VERDICT-<task>.json` is renamed into place
(seen through inotify on `.referee/`, never by polling). Each trial is a new task (so no loop
guard applies) and the previous record is removed first, with a quiet gap. With `--restore`, the
orchestrator puts the tree back with `git checkout -- .` after each verdict, as it would after a
REJECT.

Side by side, in the same run: after each trial, one `git status --porcelain` on the same tree
(what a scripted guard runs per event at the least), timed as a whole process; and, with
`--verify N`, N one-shot `referee verify` runs interleaved with N `git status --porcelain` runs.

  code_change.py REFEREE [--files 1000] [--folders 20] [--changed 10] [--trials 100]
                 [--warmup 3] [--restore] [--verify 0] [--keep DIR]

Prints one JSON object: {"name", "files", "folders", "changed", "trials", "ok", "timeouts",
"p50_ms", "p99_ms", "mean_ms", "min_ms", "max_ms", "verdicts", "git_status_p50_ms",
"git_status_p99_ms", "ratio_p50", "ratio_p99", "verify_p50_ms", "verify_git_status_p50_ms",
"verify_ratio_p50", and the same as CPU time (user + system): "verify_cpu_p50_ms",
"verify_git_status_cpu_p50_ms", "verify_cpu_ratio_p50", and every trial's time in order, "trials_ms"}; the five slowest
trials on stderr.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import IN_MOVED_TO, IN_CREATE, Inotify  # noqa: E402


def git(ws, *args):
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=ws, env=env,
                   check=True, stdout=subprocess.DEVNULL)


def children_cpu_ms():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000


def timed(cmd, **kw):
    """Runs cmd; its wall time and its CPU time (user + system, all its threads), in ms."""
    c, t = children_cpu_ms(), time.perf_counter()
    subprocess.run(cmd, **kw)
    return (time.perf_counter() - t) * 1000, children_cpu_ms() - c


def git_status(ws):
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    return timed(["git", "status", "--porcelain"], cwd=ws, env=env, check=True,
                 stdout=subprocess.DEVNULL)


def git_status_ms(ws):
    return git_status(ws)[0]


def rel_of(i, folders):
    return f"src/pkg{i % folders:04d}/mod{i:05d}.py"


def make_workspace(ws, files, folders):
    for i in range(files):
        d = os.path.join(ws, os.path.dirname(rel_of(i, folders)))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(ws, rel_of(i, folders)), "w") as f:
            f.write(f"def f{i}():\n    return {i}\n")
    with open(os.path.join(ws, "src", "orchestrator.py"), "w") as f:
        f.write("ROLES = ['worker']\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "base")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("referee")
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--folders", type=int, default=20)
    p.add_argument("--changed", type=int, default=10)
    p.add_argument("--restore", action="store_true", help="git checkout -- . after each verdict")
    p.add_argument("--verify", type=int, default=0, help="one-shot verify runs beside git status")
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--timeout", type=float, default=5.0)
    p.add_argument("--gap", type=float, default=0.15, help="quiet seconds before each trial")
    p.add_argument("--keep", help="build the workspace here (must not exist) and keep it")
    a = p.parse_args()

    root = a.keep or tempfile.mkdtemp(prefix="referee-cc-bench-")
    ws = os.path.join(root, "ws")
    os.makedirs(ws)
    make_workspace(ws, a.files, a.folders)
    state = os.path.join(root, "state")
    log = open(os.path.join(root, "watch.out"), "w")
    proc = subprocess.Popen([a.referee, "watch", ws, "--protocol", "code-change", "--quiet",
                             "--state-dir", state],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    out = os.path.join(ws, ".referee")
    deadline = time.perf_counter() + 10
    while not os.path.exists(os.path.join(out, "OBSERVER-HEARTBEAT.json")):
        if time.perf_counter() > deadline or proc.poll() is not None:
            sys.exit(f"code_change.py: the referee did not start (see {root}/watch.out)")
        time.sleep(0.01)
    tasks = os.path.join(ws, ".tasks")
    os.makedirs(tasks)
    watch = Inotify(out, IN_MOVED_TO | IN_CREATE)
    paths = [rel_of(i, a.folders) for i in range(0, a.files, max(1, a.files // a.changed))][: a.changed]
    samples, timeouts, verdicts, git_samples = [], 0, {}, []
    trials = []  # (trial, which change, ms): to see which trials make the tail
    previous = None
    try:
        for t in range(a.warmup + a.trials):
            if previous:
                os.remove(previous)
            protected = t % 2 == 0
            changed = list(paths[: a.changed - 1]) + (["src/orchestrator.py"] if protected else [paths[-1]])
            for rel in changed:
                with open(os.path.join(ws, rel), "w") as f:
                    f.write(f"def g():\n    return {t}\n" if rel.endswith(".py") and "orchestrator" not in rel
                            else f"ROLES = ['worker', 'r{t}']\n")
            if not protected:
                with open(os.path.join(ws, "src/orchestrator.py"), "w") as f:
                    f.write("ROLES = ['worker']\n")
            task = f"b{t:04d}"
            record = {
                "task_id": task, "status": "pending_review", "description": "bench", "attempt": 1,
                "summary": "Here's what I did: bench.",
                "changes": {"added": [], "modified": changed, "removed": []},
                "pre_hashes": {}, "post_hashes": {},
            }
            tmp = os.path.join(tasks, f".{task}.tmp")
            with open(tmp, "w") as f:
                json.dump(record, f)
            time.sleep(a.gap)
            watch.drain()
            name = f"OBSERVER-VERDICT-{task}.json"
            dst = os.path.join(tasks, f"{task}.json")
            start = time.perf_counter()
            os.rename(tmp, dst)
            seen = watch.wait_for(name, IN_MOVED_TO | IN_CREATE, a.timeout)
            previous = dst
            if seen is None:
                timeouts += 1
                continue
            if t >= a.warmup:
                samples.append((seen - start) * 1000)
                trials.append((t, "protected" if protected else "plain", samples[-1]))
                git_samples.append(git_status_ms(ws))
                try:
                    with open(os.path.join(out, name)) as f:
                        v = json.load(f)["verdict"]
                    verdicts[v] = verdicts.get(v, 0) + 1
                except (OSError, ValueError, KeyError):
                    pass
            if a.restore:
                git(ws, "checkout", "-q", "--", ".")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    verify, verify_git, verify_cpu, verify_git_cpu = [], [], [], []
    if a.verify:
        # The tree as the last trial left it, a record pending: verify judges it, git lists it.
        # Wall time is what the bar is about; CPU time (user + system) is also reported, as it
        # holds still on a machine that other work shares.
        for _ in range(a.verify):
            wall, cpu = timed([a.referee, "verify", ws, "--protocol", "code-change", "--quiet",
                               "--state-dir", state], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
            verify.append(wall)
            verify_cpu.append(cpu)
            wall, cpu = git_status(ws)
            verify_git.append(wall)
            verify_git_cpu.append(cpu)
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)

    def pct(xs, q):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else None

    s = sorted(samples)
    ratio = lambda x, y: round(x / y, 3) if x is not None and y else None
    # The bars at a glance (stderr; stdout stays one JSON object).
    fmt = lambda x: "-" if x is None else f"{x:.1f}"
    print(f"live: p50 {fmt(pct(s, 0.50))} ms, p99 {fmt(pct(s, 0.99))} ms; git status p50 "
          f"{fmt(pct(git_samples, 0.50))}, p99 {fmt(pct(git_samples, 0.99))} ms; ratio p50 "
          f"{ratio(pct(s, 0.50), pct(git_samples, 0.50))}, p99 "
          f"{ratio(pct(s, 0.99), pct(git_samples, 0.99))}", file=sys.stderr)
    if trials:
        slow = sorted(trials, key=lambda x: -x[2])[:5]
        print("slowest trials: " + ", ".join(f"#{t} ({w}) {ms:.1f} ms" for t, w, ms in slow),
              file=sys.stderr)
    if a.verify:
        print(f"verify ({a.verify} runs interleaved with git status): wall median "
              f"{fmt(pct(verify, 0.50))} vs {fmt(pct(verify_git, 0.50))} ms, ratio "
              f"{ratio(pct(verify, 0.50), pct(verify_git, 0.50))}; CPU median "
              f"{fmt(pct(verify_cpu, 0.50))} vs {fmt(pct(verify_git_cpu, 0.50))} ms, ratio "
              f"{ratio(pct(verify_cpu, 0.50), pct(verify_git_cpu, 0.50))}", file=sys.stderr)
    print(json.dumps({
        "name": "referee watch --protocol code-change", "files": a.files, "folders": a.folders,
        "changed": a.changed, "restore": a.restore, "trials": a.trials, "ok": len(s),
        "timeouts": timeouts, "p50_ms": pct(s, 0.50), "p99_ms": pct(s, 0.99),
        "mean_ms": statistics.fmean(s) if s else None, "min_ms": s[0] if s else None,
        "max_ms": s[-1] if s else None, "verdicts": verdicts,
        "git_status_p50_ms": pct(git_samples, 0.50), "git_status_p99_ms": pct(git_samples, 0.99),
        "ratio_p50": ratio(pct(s, 0.50), pct(git_samples, 0.50)),
        "ratio_p99": ratio(pct(s, 0.99), pct(git_samples, 0.99)),
        "verify_p50_ms": pct(verify, 0.50), "verify_git_status_p50_ms": pct(verify_git, 0.50),
        "verify_ratio_p50": ratio(pct(verify, 0.50), pct(verify_git, 0.50)),
        "verify_cpu_p50_ms": pct(verify_cpu, 0.50),
        "verify_git_status_cpu_p50_ms": pct(verify_git_cpu, 0.50),
        "verify_cpu_ratio_p50": ratio(pct(verify_cpu, 0.50), pct(verify_git_cpu, 0.50)),
        "trials_ms": [round(ms, 2) for _, _, ms in trials],
    }))


if __name__ == "__main__":
    main()
