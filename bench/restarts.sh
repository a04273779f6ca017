#!/usr/bin/env bash
# Restarts a referee that holds a STOP, again and again, while a thread reads OBSERVER-STOP.md
# at full speed, and sums what the reader saw: polls, times the STOP was absent, and reads of a
# file that was not a whole STOP (torn). The three scenarios are the integration tests in
# tests/it/attacks.rs: kill -9 and restart, SIGTERM and restart, and a restart while the failing
# input is being rewritten (caught half-written).
#
#   bench/restarts.sh            # 20 rounds of each scenario
#   ROUNDS=5 bench/restarts.sh
#
# Exit status: 0 when no round saw the STOP absent or torn.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
rounds=${ROUNDS:-20}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

cargo test --locked --quiet --test it --no-run
status=0
for ((i = 1; i <= rounds; i++)); do
  # The three tests run one at a time, so each restart has the machine to itself.
  if ! cargo test --locked --quiet --test it -- --test-threads=1 --nocapture \
    attacks::a_standing_stop_survives >>"$log" 2>&1; then
    status=1
  fi
done

python3 - "$log" "$rounds" "$status" <<'PY'
import re, sys
log, rounds, status = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = re.findall(r"(\w+) rewrite=(\w+): (\d+) polls, (\d+) absent, (\d+) torn",
                  open(log, errors="replace").read())
by = {}
for death, rewrite, polls, absent, torn in rows:
    key = f"{death}{' (input mid-write)' if rewrite == 'true' else ''}"
    r = by.setdefault(key, [0, 0, 0, 0])
    r[0] += 1; r[1] += int(polls); r[2] += int(absent); r[3] += int(torn)
print("| restart | rounds | polls | STOP absent | torn reads |")
print("|---|---:|---:|---:|---:|")
for key, (n, polls, absent, torn) in sorted(by.items()):
    print(f"| {key} | {n} | {polls:,} | {absent} | {torn} |")
total = [sum(r[i] for r in by.values()) for i in range(4)]
print(f"\n{total[0]} restarts ({rounds} rounds asked), {total[1]:,} polls, "
      f"{total[2]} absent, {total[3]} torn; tests exit status {status}")
sys.exit(1 if status or total[2] or total[3] or total[0] < 3 * rounds else 0)
PY
