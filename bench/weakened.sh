#!/usr/bin/env bash
# CC-10 replayed on real repositories' history (bench/weakened.py says how and what it prints).
#
#   bench/weakened.sh [--commits N] [--labels FILE] [--out DIR] GIT_DIR...
#
# GIT_DIR: a repository's git directory (bare or `.git`); nothing is checked out or written
# there. The labels of the commits reviewed for this repository's figures are in
# bench/weakened-labels.tsv (pass `--labels bench/weakened-labels.tsv`). Needs python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
command -v python3 >/dev/null || { echo "weakened.sh: needs python3" >&2; exit 2; }
# The executable's path comes from cargo itself: `cargo bench --no-run` builds the bench profile;
# DEBUG=1 an unoptimised build (quicker to build; the per-commit times are then not figures).
if [ -n "${DEBUG:-}" ]; then build=(cargo build --quiet); else build=(cargo bench --quiet --no-run); fi
bin=$("${build[@]}" --bench weakened_replay --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "weakened_replay" and m.get("executable"):
        print(m["executable"])')
exec python3 "$here/weakened.py" --bin "$bin" "$@"
