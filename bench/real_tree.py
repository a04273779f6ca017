#!/usr/bin/env python3
"""One-shot `referee verify --protocol code-change` on a real tree, cold and warm, beside
`git status` (python3 standard library; Linux).

The tree is real source, not the latency bench's 30-byte files: FILES files (default 20,000)
taken in path order from the crates in the local cargo registry (`~/.cargo/registry/src/*`,
what `cargo` downloaded for the builds on this machine) and then, when those run out, from
Python's standard library (`/usr/lib/python3*`), Perl's (`/usr/share/perl*`) and the stable
Rust toolchain's HTML documentation; files over 256 KiB are left out (test data,
generated tables). Copied into a new git repository and committed; no network.

Then, with a task record pending (one file changed, declared):

- cold: `verify` with no stat cache (every file read and hashed) and no kept listing of the
  baseline commit, RUNS times, each after both are removed, interleaved with
  `git status --porcelain`;
- warm: `verify` again with the cache the previous run left, RUNS times, interleaved with
  `git status --porcelain`.

Beside the cold runs, the floor of any reader that does not take git's index on trust (SPEC
§8: the referee never does): every file `git status` sees read and given its blob id by git
itself, `git hash-object --stdin-paths` (git's collision-detecting SHA-1), in two processes
that each take half the paths, as `verify` hashes on two threads.

`verify` runs as a user runs it: no `--state-dir` (XDG_STATE_HOME points into the bench's
folder). The files are given their times SETTLE seconds (default 3) before the first `verify`,
as on a checkout that is not seconds old: a file changed within 2 s of a read is never taken
from the cache (the racy-timestamp rule).

  real_tree.py REFEREE [REFEREE2 ...] [--files 20000] [--runs 10] [--keep DIR]

With `--keep DIR`, the tree is made in DIR and kept; a later run with the same DIR uses it.

With several binaries, their runs are interleaved in the same loop (side by side, one run).
Prints the medians and ratios on stderr and one JSON object per binary on stdout.
"""

import argparse
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MAX_FILE = 256 * 1024


def children_cpu_ms():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000


def timed(cmd, **kw):
    c, t = children_cpu_ms(), time.perf_counter()
    subprocess.run(cmd, **kw)
    return (time.perf_counter() - t) * 1000, children_cpu_ms() - c


def git(ws, *args):
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=ws,
                   check=True, stdout=subprocess.DEVNULL)


def sources():
    """(source root, relative path) of every candidate file, in order."""
    roots = sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*")))
    roots += sorted(glob.glob("/usr/lib/python3*"))
    roots += sorted(glob.glob("/usr/share/perl*"))
    roots += sorted(glob.glob(os.path.expanduser("~/.rustup/toolchains/stable-*/share/doc/rust/html")))
    for root in roots:
        found = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "__pycache__")]
            for f in files:
                found.append(os.path.relpath(os.path.join(d, f), root))
        for rel in sorted(found):
            yield root, rel


def make_tree(ws, files):
    n, size = 0, 0
    for root, rel in sources():
        if n >= files:
            break
        src = os.path.join(root, rel)
        try:
            st = os.lstat(src)
        except OSError:
            continue
        if not os.path.isfile(src) or os.path.islink(src) or st.st_size > MAX_FILE:
            continue
        prefix = os.path.basename(root) if ".cargo" not in root else "crates"
        dst = os.path.join(ws, prefix, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)
        n += 1
        size += st.st_size
    # Git's own ignore files among the sources would hide some of the copies from git.
    with open(os.path.join(ws, ".gitignore"), "w") as f:
        f.write("")
    git(ws, "init", "-q")
    git(ws, "add", "-A", "-f")
    git(ws, "commit", "-q", "-m", "base")
    return n, size


def pending(ws, changed):
    with open(os.path.join(ws, changed), "a") as f:
        f.write("\n// bench\n")
    os.makedirs(os.path.join(ws, ".tasks"), exist_ok=True)
    record = {
        "task_id": "t1", "status": "pending_review", "description": "bench", "attempt": 1,
        "summary": "Here's what I did: bench.",
        "changes": {"added": [], "modified": [changed], "removed": []},
        "pre_hashes": {}, "post_hashes": {},
    }
    with open(os.path.join(ws, ".tasks", "t1.json"), "w") as f:
        json.dump(record, f)


def med(xs):
    return statistics.median(xs) if xs else None


def ratio(a, b):
    return round(a / b, 3) if a and b else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("referee", nargs="+")
    p.add_argument("--files", type=int, default=20000)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--settle", type=float, default=3.0)
    p.add_argument("--keep", help="build the tree here and keep it (or use the one kept there)")
    a = p.parse_args()

    root = a.keep or tempfile.mkdtemp(prefix="referee-real-tree-")
    ws = os.path.join(root, "ws")
    if os.path.isdir(os.path.join(ws, ".tasks")):
        # A tree an earlier run made and kept (`--keep`): used as it is, its caches dropped.
        for d in glob.glob(os.path.join(root, "state-*")):
            shutil.rmtree(d)
        tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ws, check=True,
                                 capture_output=True).stdout.split(b"\0")[:-1]
        n = len(tracked)
        size = sum(os.lstat(os.path.join(ws, os.fsdecode(p))).st_size for p in tracked)
    else:
        os.makedirs(ws)
        t = time.perf_counter()
        n, size = make_tree(ws, a.files)
        print(f"tree: {n} files, {size / 1e6:.1f} MB, made in {time.perf_counter() - t:.1f} s",
              file=sys.stderr)
        changed = subprocess.run(["git", "ls-files"], cwd=ws, check=True, capture_output=True,
                                 text=True).stdout.splitlines()[n // 2]
        pending(ws, changed)
    # One `git status` that may refresh git's own index, then the files settle.
    subprocess.run(["git", "status", "--porcelain"], cwd=ws, check=True, stdout=subprocess.DEVNULL)
    time.sleep(a.settle)

    homes = [os.path.join(root, f"state-{i}") for i in range(len(a.referee))]
    envs = [dict(os.environ, XDG_STATE_HOME=h) for h in homes]
    gstat_env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")

    def verify(i):
        return timed([a.referee[i], "verify", ws, "--protocol", "code-change", "--quiet"],
                     env=envs[i], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def git_status():
        return timed(["git", "status", "--porcelain"], cwd=ws, env=gstat_env, check=True,
                     stdout=subprocess.DEVNULL)

    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ws, check=True,
                            capture_output=True).stdout.split(b"\0")
    listed = [p for p in listed if p and b"\n" not in p]
    halves = []
    for k in range(2):
        h = os.path.join(root, f"paths-{k}")
        with open(h, "wb") as f:
            f.write(b"".join(p + b"\n" for p in listed[k::2]))
        halves.append(h)

    def hash_floor():
        c, t = children_cpu_ms(), time.perf_counter()
        procs = []
        for h in halves:
            with open(h, "rb") as f:
                procs.append(subprocess.Popen(["git", "hash-object", "--stdin-paths"], cwd=ws,
                                              stdin=f, stdout=subprocess.DEVNULL))
        for p in procs:
            p.wait()
        return (time.perf_counter() - t) * 1000, children_cpu_ms() - c

    def drop_caches(i):
        # Every stat cache this binary may have kept (its state directories under its home),
        # and the baseline commit's listing kept beside it: a first `verify` has neither.
        for name in ("statcache.bin", "baseline-tree.bin"):
            for f in glob.glob(os.path.join(homes[i], "**", name), recursive=True):
                os.remove(f)

    cold = [[] for _ in a.referee]
    warm = [[] for _ in a.referee]
    gcold, gwarm, floor = [], [], []
    # A first run of each, not timed: the state directories made, the binaries paged in.
    for i in range(len(a.referee)):
        verify(i)
    for _ in range(a.runs):
        for i in range(len(a.referee)):
            drop_caches(i)
            cold[i].append(verify(i))
            gcold.append(git_status())
        floor.append(hash_floor())
    for _ in range(a.runs):
        for i in range(len(a.referee)):
            warm[i].append(verify(i))
            gwarm.append(git_status())
    g_cold, g_cold_cpu = med([w for w, _ in gcold]), med([c for _, c in gcold])
    g_warm, g_warm_cpu = med([w for w, _ in gwarm]), med([c for _, c in gwarm])
    f_wall, f_cpu = med([w for w, _ in floor]), med([c for _, c in floor])
    print(f"floor: git hash-object of the {len(listed)} files on two processes {f_wall:.1f} ms "
          f"(CPU {f_cpu:.1f})", file=sys.stderr)
    for i, ref in enumerate(a.referee):
        c, w = med([x for x, _ in cold[i]]), med([x for x, _ in warm[i]])
        c_cpu, w_cpu = med([x for _, x in cold[i]]), med([x for _, x in warm[i]])
        print(f"{ref}: cold {c:.1f} ms (CPU {c_cpu:.1f}) vs git status {g_cold:.1f} ms "
              f"(CPU {g_cold_cpu:.1f}): {ratio(c, g_cold)}x (CPU {ratio(c_cpu, g_cold_cpu)}x); "
              f"warm {w:.1f} ms (CPU {w_cpu:.1f}) vs git status {g_warm:.1f} ms (CPU "
              f"{g_warm_cpu:.1f}): {ratio(w, g_warm)}x (CPU {ratio(w_cpu, g_warm_cpu)}x); "
              f"cold vs the floor {ratio(c, f_wall)}x (CPU {ratio(c_cpu, f_cpu)}x)",
              file=sys.stderr)
        print(json.dumps({
            "name": "referee verify --protocol code-change, real tree", "referee": ref,
            "files": n, "bytes": size, "runs": a.runs,
            "cold_p50_ms": c, "cold_cpu_p50_ms": c_cpu, "git_status_cold_p50_ms": g_cold,
            "cold_ratio_p50": ratio(c, g_cold), "git_status_cold_cpu_p50_ms": g_cold_cpu,
            "cold_cpu_ratio_p50": ratio(c_cpu, g_cold_cpu),
            "warm_p50_ms": w, "warm_cpu_p50_ms": w_cpu, "git_status_warm_p50_ms": g_warm,
            "warm_ratio_p50": ratio(w, g_warm), "git_status_warm_cpu_p50_ms": g_warm_cpu,
            "warm_cpu_ratio_p50": ratio(w_cpu, g_warm_cpu),
            "hash_floor_p50_ms": f_wall, "hash_floor_cpu_p50_ms": f_cpu,
            "cold_floor_ratio_p50": ratio(c, f_wall),
        }))
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
