#!/usr/bin/env bash
# How fast is a one-shot `referee verify WORKSPACE --protocol code-change` on a real tree of
# FILES files (default 20,000, about 200 MB: the crates in the local cargo registry's sources,
# then Python's and Perl's standard libraries and the Rust docs; no network), the first time
# (no stat cache: every file read and hashed) and the next (the cache `verify` kept), side by
# side with `git status --porcelain` on the same tree, and the first time beside the floor of
# reading the tree (git's own `git hash-object` of every file, on two processes)? Targets
# (issue 30): cold <= 3x git status, warm <= 1.2x (docs/benchmarks.md says why the first is
# under the floor and over 3x).
#
# Prints the medians and ratios on stderr and one JSON object per binary on stdout. REFEREE
# names the binary (else `cargo build --release`); BASELINE names a second one, run
# interleaved with it in the same loop.
#
#   bench/real-tree.sh
#   RUNS=20 FILES=20000 REFEREE=target/release/referee BASELINE=../base/target/release/referee bench/real-tree.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
command -v python3 >/dev/null || { echo "real-tree.sh: needs python3" >&2; exit 2; }
command -v git >/dev/null || { echo "real-tree.sh: needs git" >&2; exit 2; }
if [ -z "${REFEREE:-}" ]; then
    profile=${PROFILE:-release}
    (cd "$root" && cargo build --profile "$profile" --locked --quiet)
    REFEREE="$root/target/$profile/referee"
fi
python3 "$here/real_tree.py" "$REFEREE" ${BASELINE:+"$BASELINE"} --files "${FILES:-20000}" \
    --runs "${RUNS:-10}" ${KEEP:+--keep "$KEEP"}
# KEEP=DIR makes the tree in DIR and keeps it; a later run with the same KEEP uses it.
