#!/usr/bin/env bash
# Runs the fuzz targets (tests/it/fuzz.rs, proptest on the stable toolchain) for many inputs in a
# release build and prints, per target: inputs run, failures, wall time and inputs per second.
#
#   bench/fuzz.sh                                 # every target, 1,000,000 inputs each
#   CASES=20000 bench/fuzz.sh                     # fewer inputs per target
#   CASES_PROTOCOL=50000 bench/fuzz.sh            # one target's own count (name upper-cased,
#                                                 # `-` as `_`: CASES_TRACKER_MUTATED, ...)
#   TESTS="fuzz::tracker fuzz::gates" bench/fuzz.sh   # only these tests (libtest filters)
#   THREADS=1 bench/fuzz.sh                       # targets run two at a time by default
#
# Each input runs under the targets' watchdog (a hang aborts the run and prints the input) and
# memory bound; a failure is shrunk and printed, never written to a file. Inputs counted include
# the shrinking steps of a failing target. Exit status: 0 when every target passed. The whole
# test output is kept in target/fuzz-last.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
cases=${CASES:-1000000}
threads=${THREADS:-2}
tests=${TESTS:-fuzz::}
log=$(mktemp)
trap 'cp "$log" target/fuzz-last.log 2>/dev/null; rm -f "$log"' EXIT

# Per-target overrides go through to the tests as REFEREE_FUZZ_CASES_<TARGET>.
while IFS='=' read -r name value; do
  export "REFEREE_FUZZ_${name}=${value}"
done < <(env | grep -E '^CASES_[A-Z_]+=' || true)

cargo test --release --locked --quiet --test it --no-run
start=$(date +%s.%N)
set +e
# shellcheck disable=SC2086 # TESTS is a list of filters
REFEREE_FUZZ_CASES=$cases cargo test --release --locked --quiet --test it -- $tests \
  --test-threads="$threads" --nocapture >"$log" 2>&1
status=$?
set -e
end=$(date +%s.%N)

python3 - "$log" "$start" "$end" "$status" <<'PY'
import re, sys
log, start, end, status = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
# libtest's own `test x ... ok` lines interleave with the targets' output: match anywhere.
stats = re.findall(r"fuzz-stats (target=\S+ inputs=\d+ failures=\d+ secs=[\d.]+ per_sec=\d+)",
                   open(log, errors="replace").read())
rows = [dict(re.findall(r"(\w+)=(\S+)", s)) for s in stats]
print("| target | inputs | failures | wall time | inputs/s |")
print("|---|---:|---:|---:|---:|")
total = 0
for r in sorted(rows, key=lambda r: r["target"]):
    n = int(r["inputs"]); total += n
    print(f"| {r['target']} | {n:,} | {r['failures']} | {float(r['secs']):.1f} s | {float(r['per_sec']):,.0f} |")
failed = sum(int(r["failures"]) for r in rows)
print(f"\n{len(rows)} targets, {total:,} inputs, {failed} failing targets, {end - start:.1f} s wall "
      f"(targets ran in parallel; test exit status {status})")
if status != 0:
    text = open(log, errors="replace").read()
    i = text.find("failures:")
    print(text[i:i + 6000] if i >= 0 else text[-6000:])
PY
exit "$status"
