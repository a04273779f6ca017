#!/usr/bin/env python3
"""CC-05 on real JavaScript and TypeScript files, against the engines that run them.

    python3 bench/real_code_js.py DIR...      # e.g. a node_modules tree

Every `.js .mjs .cjs .jsx .ts .mts .cts .tsx` file under DIR (and so `.d.ts`, `.d.mts`, ...) is
judged twice:

- by the reference: Node's own compiler for JavaScript (`vm.compileFunction`, the CommonJS
  wrapper, for `.cjs`; `vm.SourceTextModule` for `.mjs`; `.js` and `.jsx`-less files either way,
  as Node's syntax detection does) and TypeScript's parser (`ts.createSourceFile`'s
  parse diagnostics, from the first `node_modules/typescript` under DIR) for TypeScript;
- by the referee: `cargo bench --bench real_code` (the engine of `bench/real-code.sh`), which
  calls `referee::syntax::check` on each file in a release build and times it.

It prints, per kind, how many files the reference accepts, how many of those CC-05 rejects
(false FAIL, with the first few messages), how many the reference rejects that CC-05 passes
(false PASS), and CC-05's throughput (bytes over the summed parse times). `.jsx` and `.tsx`
are judged by TypeScript's parser (Node has no JSX). Needs `node` and `cargo`; nothing is
written outside a temporary directory.
"""

import collections
import json
import os
import subprocess
import sys
import tempfile

EXTS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")

ORACLE = r"""
const fs = require('fs');
const vm = require('vm');
const [list, tsPath] = process.argv.slice(2);
const ts = require(tsPath);
const out = [];
function esm(src) { new vm.SourceTextModule(src); }
function cjs(src) {
  vm.compileFunction(src, ['exports', 'require', 'module', '__filename', '__dirname']);
}
for (const f of fs.readFileSync(list, 'utf8').split('\n').filter(Boolean)) {
  let ok = true, why = '';
  try {
    const src = fs.readFileSync(f, 'utf8');
    const lower = f.toLowerCase();
    if (/\.(ts|mts|cts|tsx|jsx)$/.test(lower)) {
      const kind = lower.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
      const sf = ts.createSourceFile(f, src, ts.ScriptTarget.Latest, false, kind);
      if (sf.parseDiagnostics.length) {
        ok = false;
        const d = sf.parseDiagnostics[0];
        why = ts.flattenDiagnosticMessageText(d.messageText, ' ');
      }
    } else if (lower.endsWith('.mjs')) {
      esm(src);
    } else if (lower.endsWith('.cjs')) {
      cjs(src);
    } else {
      try { cjs(src); } catch (e) { esm(src); }
    }
  } catch (e) { ok = false; why = String(e.message || e); }
  out.push(JSON.stringify([f, ok, why]));
}
process.stdout.write(out.join('\n') + '\n');
"""


def kind(path):
    name = os.path.basename(path).lower()
    stem, ext = os.path.splitext(name)
    if ext in (".ts", ".mts", ".cts") and (stem.endswith(".d") and len(stem) > 2 or ".d." in stem[1:]):
        return ".d" + ext
    return ext


def main(dirs):
    files = []
    ts_path = None
    for d in dirs:
        for root, subdirs, names in os.walk(d):
            subdirs.sort()
            if ts_path is None and os.path.basename(root) == "typescript" and "package.json" in names:
                ts_path = os.path.abspath(root)
            for n in sorted(names):
                p = os.path.join(root, n)
                if n.lower().endswith(EXTS) and os.path.isfile(p) and not os.path.islink(p):
                    files.append(os.path.abspath(p))
    if not files:
        sys.exit("no JavaScript or TypeScript files found")
    if ts_path is None:
        sys.exit("no node_modules/typescript under the given directories (npm install typescript)")
    with tempfile.TemporaryDirectory() as tmp:
        listing = os.path.join(tmp, "files")
        with open(listing, "w") as f:
            f.write("\n".join(files) + "\n")
        oracle = os.path.join(tmp, "oracle.js")
        with open(oracle, "w") as f:
            f.write(ORACLE)
        ref = subprocess.run(
            ["node", "--experimental-vm-modules", "--no-warnings", "--stack-size=8000", oracle, listing, ts_path],
            check=True, capture_output=True, text=True,
        ).stdout
        engine = subprocess.run(
            ["cargo", "bench", "--quiet", "--bench", "real_code", "--", "--list", listing],
            check=True, capture_output=True, text=True,
        ).stdout
    accepted = {}
    for line in ref.splitlines():
        path, ok, why = json.loads(line)
        accepted[path] = (ok, why)
    stats = collections.defaultdict(lambda: collections.Counter())
    examples = collections.defaultdict(list)
    for line in engine.splitlines():
        verdict, _ext, size, micros, path, evidence = (line.split("\t", 5) + [""])[:6]
        if path not in accepted:
            continue
        k = kind(path)
        ok, why = accepted[path]
        s = stats[k]
        s["files"] += 1
        s["bytes"] += int(size)
        s["micros"] += int(micros)
        s["ref_ok"] += ok
        if ok and verdict != "PASS":
            s["false_fail"] += 1
            examples[k].append(evidence.strip())
        if not ok and verdict == "PASS":
            s["false_pass"] += 1
            examples[k + " false PASS"].append(f"{path}: {why}")
        if not ok and verdict != "PASS":
            s["both_reject"] += 1
    total = collections.Counter()
    print(f"{'kind':8} {'files':>6} {'ref ok':>6} {'false FAIL':>11} {'false PASS':>10} {'MB':>7} {'MB/s':>7}")
    for k in sorted(stats):
        s = stats[k]
        total.update(s)
        row(k, s)
    row("all", total)
    for k in sorted(examples):
        print(f"\n{k}: {len(examples[k])}")
        for e in examples[k][:5]:
            print(f"  {e[:300]}")


def row(k, s):
    mb = s["bytes"] / 1048576
    rate = mb / (s["micros"] / 1e6) if s["micros"] else 0.0
    ff = s["false_fail"]
    pct = 100.0 * ff / s["ref_ok"] if s["ref_ok"] else 0.0
    print(f"{k:8} {s['files']:>6} {s['ref_ok']:>6} {ff:>5} {pct:>4.1f}% {s['false_pass']:>10} {mb:>7.1f} {rate:>7.1f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
