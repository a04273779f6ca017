#!/usr/bin/env bash
# `referee verify` speed as whole processes, side by side in one hyperfine run:
#   - the clean fixture (target: < 5 ms);
#   - the large build (clean run + 30,000 screenshots + 9 auditor reports of ~2 MB) against
#     the floor: one process that walks the tree and reads every non-PNG file once
#     (target: within 1.2x of the floor, issue 16 part 11; it was 2x).
# The in-process version of the same comparison is `cargo bench --bench verify`.
#
#   bench/verify.sh                                   # builds target/release/referee first
#   REFEREE=target/profiling/referee bench/verify.sh  # … or measures that binary
#   BASELINE=/path/to/older/referee bench/verify.sh   # … and another build beside it, same run
#
# Needs: hyperfine, python3 (Debian: hyperfine python3). RUNS / RUNS_LARGE set the run counts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
if [ -z "${REFEREE:-}" ]; then
    cargo build --release --quiet
    REFEREE=target/release/referee
fi
referee=$(realpath "$REFEREE")
baseline=()
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$referee" replay clean "$work/clean" --speed 0 --quiet
bench/make-large-build.sh "$work/large" "$referee" >/dev/null
# The large build stops before the weaver; finish it so every check runs.
"$referee" replay clean "$work/large" --speed 0 --from 1h20m --quiet
# Write the new trees out before timing: 136 MB of dirty pages flushed in the background during
# the runs made every figure (the floor's too) swing by a third.
sync

# Process start alone (`--version`, `/bin/true`) beside the clean run shows what is left to
# the referee's own work. Medians: the machine is shared and noisy.
hyperfine -N --warmup 10 --runs "${RUNS:-200}" --export-json "$work/clean.json" \
  "$referee verify $work/clean" \
  "$referee --version" \
  "/bin/true" >/dev/null
[ -z "${BASELINE:-}" ] || baseline=("$(realpath "$BASELINE") verify $work/large")
hyperfine -N --warmup 3 --runs "${RUNS_LARGE:-30}" --export-json "$work/large.json" \
  "$referee verify $work/large" \
  "${baseline[@]}" \
  "sh -c 'find $work/large -type f ! -name \"*.png\" -exec cat {} + >/dev/null'" >/dev/null
BASELINE_PATH=$( [ -z "${BASELINE:-}" ] || realpath "$BASELINE") \
python3 - "$work/clean.json" "$work/large.json" <<'PY'
import json, os, sys
base = os.environ.get("BASELINE_PATH") or None
print("| command | median | mean ± σ | min | median / floor |")
print("|---|---|---|---|---|")
for path in sys.argv[1:]:
    results = json.load(open(path))["results"]
    # The last command of the large run is the floor (walk + read every non-PNG file once).
    floor = results[-1]["median"] if path.endswith("large.json") else None
    for r in results:
        ms = lambda s: f"{1000 * s:.2f} ms"
        exe = r["command"].split()[0]
        name = exe.rsplit("/", 1)[-1] + (" (BASELINE)" if exe == base else "")
        cmd = r["command"].replace(exe, name, 1)
        ratio = f"{r['median'] / floor:.2f}×" if floor else ""
        print(f"| `{cmd}` | {ms(r['median'])} | {ms(r['mean'])} ± {ms(r['stddev'])} | {ms(r['min'])} | {ratio} |")
PY
