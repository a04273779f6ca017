"""The tables of bench/real-code.sh: CC-05's verdicts (benches/real_code.rs output) beside the
language tools' own, per language. Usage: real_code.py REFEREE.tsv PYTHON"""
import os
import shutil
import subprocess
import sys

LANGS = {
    "py": "Python", "pyi": "Python", "rs": "Rust", "go": "Go",
    "js": "JavaScript", "mjs": "JavaScript", "cjs": "JavaScript", "jsx": "JavaScript",
    "ts": "TypeScript", "mts": "TypeScript", "cts": "TypeScript", "tsx": "TypeScript",
    "json": "JSON", "toml": "TOML", "yaml": "YAML", "yml": "YAML",
}

PY_ORACLE = r"""
import ast, sys, warnings
warnings.simplefilter("ignore")
for line in sys.stdin:
    f = line.rstrip("\n")
    try:
        ast.parse(open(f, "rb").read(), f)
        print("ok")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        print("bad\t" + (type(e).__name__ + ": " + str(e)).replace("\n", " ").replace("\t", " "))
    sys.stdout.flush()
"""


def python_tool(files, python):
    if not shutil.which(python) and not os.path.exists(python):
        return None, None
    version = subprocess.run([python, "--version"], capture_output=True, text=True).stdout.strip()
    out = subprocess.run([python, "-c", PY_ORACLE], input="".join(f + "\n" for f in files),
                         capture_output=True, text=True, errors="replace").stdout.splitlines()
    if len(out) != len(files):
        return None, None
    return f"{version} ast.parse", [l.split("\t", 1)[1] if l.startswith("bad") else None for l in out]


def per_file_tool(files, argv, name):
    if not shutil.which(argv[0]):
        return None, None
    verdicts = []
    for f in files:
        r = subprocess.run(argv + [f], capture_output=True, text=True, errors="replace")
        verdicts.append(None if r.returncode == 0 and not r.stderr.strip()
                        else (r.stderr or r.stdout).strip().replace("\n", " ")[:200])
    return name, verdicts


def rust_tool(files):
    """rustc's own parser (`-Z parse-crate-root-only`, a nightly rustc) with each file's edition."""
    from real_code_mutate import edition, tool_oracle
    rustc = os.environ.get("RUSTC_NIGHTLY") or (shutil.which("rustup") and subprocess.run(
        ["rustup", "which", "--toolchain", "nightly", "rustc"], capture_output=True, text=True).stdout.strip())
    if not rustc:
        return "taken as valid (no nightly rustc)", [None] * len(files)
    version = subprocess.run([rustc, "--version"], capture_output=True, text=True).stdout.strip()
    truth = tool_oracle(files, lambda f: [rustc, "-Z", "parse-crate-root-only", "--edition", edition(f), f])
    return f"{version} -Z parse-crate-root-only", [truth[f] for f in files]


def main():
    rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
    python = sys.argv[2]
    by_lang = {}
    for verdict, ext, size, micros, path, *evidence in rows:
        lang = LANGS.get(ext, ext)
        by_lang.setdefault(lang, []).append((verdict, int(size), int(micros), path,
                                             evidence[0] if evidence else ""))
    table, details = [], []
    for lang, items in sorted(by_lang.items()):
        files = [i[3] for i in items]
        tool, truth = None, None
        if lang == "Python":
            tool, truth = python_tool(files, python)
        elif lang == "JavaScript":
            tool, truth = per_file_tool(files, ["node", "--check"], "node --check")
        elif lang == "Go":
            tool, truth = per_file_tool(files, ["gofmt", "-e", "-l"], "gofmt -e")
        elif lang == "Rust":
            tool, truth = rust_tool(files)
        fails = sum(1 for i in items if i[0] == "FAIL")
        undecided = sum(1 for i in items if i[0] == "UNDECIDED")
        size = sum(i[1] for i in items)
        seconds = sum(i[2] for i in items) / 1e6
        rate = f"{size / 1e6 / seconds:.1f}" if seconds > 0 else "-"
        if truth is None:
            table.append((lang, len(items), fails, undecided, "not installed", "-", "-", "-", rate))
            continue
        rejected = sum(1 for t in truth if t is not None)
        false_fail = [(i, t) for i, t in zip(items, truth) if t is None and i[0] == "FAIL"]
        missed = [(i, t) for i, t in zip(items, truth) if t is not None and i[0] == "PASS"]
        pct = lambda n, d: f"{n} ({100 * n / d:.2f} %)" if d else str(n)
        table.append((lang, len(items), fails, undecided, tool, rejected,
                      pct(len(false_fail), len(items) - rejected), pct(len(missed), rejected), rate))
        details += [f"false FAIL\t{i[3]}\t{i[4]}" for i, _ in false_fail]
        details += [f"missed FAIL\t{i[3]}\t{t}" for i, t in missed]
        details += [f"UNDECIDED\t{i[3]}\t{i[4]}" for i in items if i[0] == "UNDECIDED"]
    print("| language | files | CC-05 FAIL | UNDECIDED | the tool | the tool rejects "
          "| false FAILs (of files it accepts) | missed FAILs (of files it rejects) | MB/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in table:
        print("| " + " | ".join(str(c) for c in row) + " |")
    if details:
        print()
        print("\n".join(details))


main()
