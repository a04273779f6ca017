#!/usr/bin/env bash
# CPU of `referee verify` on one build directory, for two or more binaries side by side:
# interleaved runs (A B C A B C ...), each measured by `perf stat` (task-clock, page faults,
# wall), medians reported. On a shared, noisy machine the interleaving and the medians are
# what make builds comparable; task-clock counts the CPU of every thread, so it shows work
# taken out even when the wall clock hides it behind the other core.
#
#   bench/verify-cpu.sh DIR BINARY [BINARY...]         # RUNS=30 rounds by default
#   bench/make-large-build.sh /tmp/lbd && referee replay clean /tmp/lbd --speed 0 --from 1h20m --quiet
#   bench/verify-cpu.sh /tmp/lbd /tmp/ref-head target/release/referee
#
# Needs: perf (Debian: linux-perf), python3. Also prints the floor (walk + read every
# non-PNG file once) measured the same way, for the ratio.
set -euo pipefail
dir=${1:?usage: verify-cpu.sh DIR BINARY [BINARY...]}
shift
[ $# -ge 1 ] || { echo "verify-cpu: name at least one binary" >&2; exit 2; }
runs=${RUNS:-30}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
floor="find $dir -type f ! -name *.png -exec cat {} + >/dev/null"
for _ in $(seq 3); do  # warm the page cache and the binaries
    for b in "$@"; do "$b" verify "$dir" >/dev/null || true; done
done
for i in $(seq "$runs"); do
    for b in "$@"; do
        perf stat -x, -e task-clock,page-faults -o "$out.one" "$b" verify "$dir" >/dev/null || true
        start=$(date +%s%N)
        # The wall clock of the same binary, once more, outside perf.
        "$b" verify "$dir" >/dev/null || true
        end=$(date +%s%N)
        awk -F, -v b="$b" -v w="$(( (end - start) / 1000 ))" \
            '$3=="task-clock"{t=$1} $3=="page-faults"{f=$1} END{print b "\t" t "\t" f "\t" w}' \
            "$out.one" >>"$out"
    done
    perf stat -x, -e task-clock,page-faults -o "$out.one" sh -c "$floor" || true
    start=$(date +%s%N); sh -c "$floor"; end=$(date +%s%N)
    awk -F, -v w="$(( (end - start) / 1000 ))" \
        '$3=="task-clock"{t=$1} $3=="page-faults"{f=$1} END{print "floor\t" t "\t" f "\t" w}' \
        "$out.one" >>"$out"
done
rm -f "$out.one"
python3 - "$out" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, cpu, faults, wall = line.rstrip("\n").split("\t")
    rows.setdefault(name, []).append((float(cpu), float(faults), float(wall) / 1000))
floor_rows = rows.pop("floor")
floor = statistics.median(w for _, _, w in floor_rows)
first = None
print(f"| binary | CPU (task-clock) median | page faults median | wall median | wall / floor ({floor:.1f} ms) | CPU vs first |")
print("|---|---|---|---|---|---|")
for name, r in rows.items():
    cpu = statistics.median(c for c, _, _ in r)
    faults = statistics.median(f for _, f, _ in r)
    wall = statistics.median(w for _, _, w in r)
    first = first or cpu
    print(f"| `{name}` | {cpu:.1f} ms | {faults:.0f} | {wall:.1f} ms | {wall / floor:.2f}x | {cpu / first:.2f}x |")
cpu = statistics.median(c for c, _, _ in floor_rows)
faults = statistics.median(f for _, f, _ in floor_rows)
print(f"| floor (`find … -exec cat`) | {cpu:.1f} ms | {faults:.0f} | {floor:.1f} ms | 1.00x | |")
PY
