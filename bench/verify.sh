#!/usr/bin/env bash
# `referee verify` speed as whole processes, side by side in one hyperfine run:
#   - the clean fixture (target: < 5 ms);
#   - the large build (clean run + 30,000 screenshots + 9 auditor reports of ~2 MB) against
#     the floor: one process that walks the tree and reads every non-PNG file once
#     (target: within 2x of the floor).
# The in-process version of the same comparison is `cargo bench --bench verify`.
#
#   bench/verify.sh            # builds target/release/referee first
#
# Needs: hyperfine, python3 (Debian: hyperfine python3). RUNS / RUNS_LARGE set the run counts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
cargo build --release --quiet
referee=$PWD/target/release/referee
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$referee" replay clean "$work/clean" --speed 0 --quiet
bench/make-large-build.sh "$work/large" "$referee" >/dev/null
# The large build stops before the weaver; finish it so every check runs.
"$referee" replay clean "$work/large" --speed 0 --from 1h20m --quiet

# Process start alone (`--version`, `/bin/true`) beside the clean run shows what is left to
# the referee's own work. Medians: the machine is shared and noisy.
hyperfine -N --warmup 10 --runs "${RUNS:-200}" --export-json "$work/clean.json" \
  "$referee verify $work/clean" \
  "$referee --version" \
  "/bin/true" >/dev/null
hyperfine -N --warmup 3 --runs "${RUNS_LARGE:-30}" --export-json "$work/large.json" \
  "$referee verify $work/large" \
  "sh -c 'find $work/large -type f ! -name \"*.png\" -exec cat {} + >/dev/null'" >/dev/null
python3 - "$work/clean.json" "$work/large.json" <<'PY'
import json, sys
print("| command | median | mean ± σ | min |")
print("|---|---|---|---|")
for path in sys.argv[1:]:
    for r in json.load(open(path))["results"]:
        ms = lambda s: f"{1000 * s:.2f} ms"
        cmd = r["command"].replace(r["command"].split()[0], r["command"].split()[0].rsplit("/", 1)[-1], 1)
        print(f"| `{cmd}` | {ms(r['median'])} | {ms(r['mean'])} ± {ms(r['stddev'])} | {ms(r['min'])} |")
PY
