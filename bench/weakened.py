#!/usr/bin/env python3
"""CC-10 (weakened tests and gates) replayed on real repositories' history.

For each repository (a git directory, bare or not) the last N non-merge commits with one parent
are taken; each commit's changed files (text, at most 1 MiB, no submodule or symlink) are read
before and after from the object store (`git cat-file --batch`, nothing checked out) and judged
by `benches/weakened_replay.rs`, which calls what CC-10 judges a task's scope with. A commit is
FLAGGED when CC-10 has at least one finding (it would FAIL the attempt).

Labels (`--labels FILE`, tab-separated `repo<TAB>commit<TAB>true|false<TAB>note`) say, for a
flagged commit, whether it really weakens tests or gates (`true`: it deletes or skips tests,
removes assertions, lowers a coverage threshold, relaxes lint/type/CI configuration) or not
(`false`: a false FAIL). The false-FAIL rate is false / (commits judged - true), the share of the
commits that do none of this which CC-10 would FAIL.

    bench/weakened.py --bin target/release/deps/weakened_replay-... --commits 500 REPO...
    bench/weakened.sh REPO...                  # builds the replay binary, then runs this

Writes `--out DIR` (default: a temporary directory): `<repo>.jsonl` (every commit's findings) and
`flagged.tsv` (each flagged commit, its label if any, subject and findings) for review.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

SKIP_EXT = {
    "png", "jpg", "jpeg", "gif", "svg", "ico", "pdf", "woff", "woff2", "ttf", "eot", "otf",
    "zip", "gz", "tgz", "bz2", "xz", "jar", "so", "dll", "exe", "bin", "mp4", "webp",
    "md", "rst", "txt", "html", "css", "scss", "lock", "csv", "po", "mo",
}
MAX_BYTES = 1 << 20
MAX_FILES = 300


class Blobs:
    """`git cat-file --batch` over one repository."""

    def __init__(self, git_dir):
        self.p = subprocess.Popen(
            ["git", "--git-dir", git_dir, "cat-file", "--batch"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )

    def read(self, sha):
        self.p.stdin.write(sha.encode() + b"\n")
        self.p.stdin.flush()
        header = self.p.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            return None
        size = int(header[2])
        data = self.p.stdout.read(size)
        self.p.stdout.read(1)
        if size > MAX_BYTES or b"\0" in data[:8192]:
            return None
        return data.decode("utf-8", errors="replace")

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def git(git_dir, *args):
    return subprocess.run(
        ["git", "--git-dir", git_dir, *args], check=True, capture_output=True
    ).stdout


def commits(git_dir, n):
    out = git(git_dir, "rev-list", "--no-merges", "--parents", f"--max-count={n}", "HEAD")
    for line in out.decode().splitlines():
        parts = line.split()
        if len(parts) == 2:
            yield parts[0], parts[1]


def changed(git_dir, parent, commit):
    raw = git(git_dir, "diff-tree", "-r", "--no-renames", "-z", parent, commit)
    fields = raw.split(b"\0")
    i = 0
    while i + 1 < len(fields):
        meta = fields[i].decode()
        path = fields[i + 1].decode("utf-8", errors="replace")
        i += 2
        if not meta.startswith(":"):
            continue
        old_mode, new_mode, old_sha, new_sha, status = meta[1:].split()
        yield path, old_mode, new_mode, old_sha, new_sha, status[0]


def payload(git_dir, blobs, parent, commit):
    files = []
    entries = list(changed(git_dir, parent, commit))
    if len(entries) > MAX_FILES:
        return None
    for path, om, nm, osha, nsha, status in entries:
        ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
        if ext in SKIP_EXT or {om, nm} & {"160000", "120000"}:
            continue
        old = blobs.read(osha) if status != "A" else None
        new = blobs.read(nsha) if status != "D" else None
        if (status != "A" and old is None) or (status != "D" and new is None):
            continue
        files.append({"path": path, "old": old, "new": new})
    return files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--commits", type=int, default=500)
    ap.add_argument("--out")
    ap.add_argument("--labels")
    ap.add_argument("repos", nargs="+")
    a = ap.parse_args()
    out_dir = a.out or tempfile.mkdtemp(prefix="weakened-")
    os.makedirs(out_dir, exist_ok=True)
    labels = {}
    if a.labels and os.path.exists(a.labels):
        for line in open(a.labels):
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3 and not line.startswith("#"):
                labels[(parts[0], parts[1][:12])] = parts[2]
    rows = []
    flagged_rows = []
    for repo in a.repos:
        name = os.path.basename(os.path.dirname(repo.rstrip("/"))) if repo.rstrip("/").endswith("repo") else os.path.basename(repo.rstrip("/"))
        blobs = Blobs(repo)
        proc = subprocess.Popen([a.bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        judged = skipped = 0
        subjects = {}
        for commit, parent in commits(repo, a.commits):
            files = payload(repo, blobs, parent, commit)
            if files is None:
                skipped += 1
                continue
            subjects[commit] = git(repo, "log", "-1", "--format=%s", commit).decode().strip()
            proc.stdin.write(json.dumps({"id": commit, "files": files}) + "\n")
            judged += 1
        proc.stdin.close()
        results = [json.loads(l) for l in proc.stdout]
        proc.wait()
        blobs.close()
        with open(os.path.join(out_dir, f"{name}.jsonl"), "w") as f:
            for r in results:
                f.write(json.dumps(r) + "\n")
        flagged = [r for r in results if r["findings"]]
        true = sum(1 for r in flagged if labels.get((name, r["id"][:12])) == "true")
        false = sum(1 for r in flagged if labels.get((name, r["id"][:12])) == "false")
        unlabelled = len(flagged) - true - false
        micros = sorted(r["micros"] for r in results) or [0]
        rows.append((name, judged, skipped, len(flagged), true, false, unlabelled, micros[len(micros) // 2], micros[-1]))
        for r in flagged:
            flagged_rows.append((name, r["id"][:12], labels.get((name, r["id"][:12]), "?"), subjects.get(r["id"], ""), r["findings"]))
    with open(os.path.join(out_dir, "flagged.tsv"), "w") as f:
        for name, c, label, subject, found in flagged_rows:
            f.write(f"{name}\t{c}\t{label}\t{subject}\n")
            for x in found[:12]:
                f.write(f"\t\t\t  {x}\n")
            if len(found) > 12:
                f.write(f"\t\t\t  ... {len(found) - 12} more\n")
    print(f"{'repository':24} {'judged':>7} {'skipped':>7} {'flagged':>7} {'true':>5} {'false':>5} {'?':>4} {'false FAIL':>10} {'p50 us':>7} {'max us':>8}")
    tot = [0] * 6
    for name, judged, skipped, flagged, true, false, unl, p50, mx in rows:
        clean = judged - true
        rate = f"{100.0 * false / clean:.2f} %" if clean else "-"
        print(f"{name:24} {judged:7} {skipped:7} {flagged:7} {true:5} {false:5} {unl:4} {rate:>10} {p50:7} {mx:8}")
        for i, v in enumerate((judged, skipped, flagged, true, false, unl)):
            tot[i] += v
    clean = tot[0] - tot[3]
    rate = f"{100.0 * tot[4] / clean:.2f} %" if clean else "-"
    worst = f"{100.0 * (tot[4] + tot[5]) / clean:.2f} %" if clean else "-"
    print(f"{'all':24} {tot[0]:7} {tot[1]:7} {tot[2]:7} {tot[3]:5} {tot[4]:5} {tot[5]:4} {rate:>10}")
    print(f"false FAIL {rate} of the commits that weaken nothing ({worst} counting every unlabelled flag as false)")
    print(f"details: {out_dir}/flagged.tsv")


if __name__ == "__main__":
    sys.exit(main())
