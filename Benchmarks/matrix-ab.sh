#!/usr/bin/env bash
# Two builds of herald on the same Matrix notifies, side by side: whole `matrix-wrk.sh` runs in
# alternating pairs (A then B, B then A, ...), so a host whose speed drifts within minutes moves
# both runs of a pair alike. Prints each run's summary, each pair's ratio of CPU per notify
# (B / A), and their median: the figure to quote for a change too small for one pair of runs.
#
#   Benchmarks/matrix-ab.sh OLD/herald NEW/herald
#   PAIRS=5 CONNECTIONS=16 Benchmarks/matrix-ab.sh OLD/herald NEW/herald   # the defaults
#
# Each run is matrix-wrk.sh's (its ROUNDS and SECONDS_ pass through): about 40 s a run with its
# defaults. Needs what matrix-wrk.sh needs: wrk, and release builds of both.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# = 2 ] && [ -x "$1" ] && [ -x "$2" ] || { echo "usage: $0 A/herald B/herald (two release builds)" >&2; exit 2; }
PAIRS=${PAIRS:-5}
export CONNECTIONS=${CONNECTIONS:-16}
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for pair in $(seq 1 "$PAIRS"); do
  order="A B"; [ $((pair % 2)) = 0 ] && order="B A"
  for side in $order; do
    [ "$side" = A ] && herald=$1 || herald=$2
    summary=$(HERALD="$herald" Benchmarks/matrix-wrk.sh | tail -1)
    echo "$summary"
    printf '%s %s %s\n' "$pair" "$side" "$summary" >>"$runs"
  done
done
python3 - "$runs" <<'PY'
import json, statistics, sys
cpu = {}
for line in open(sys.argv[1]):
    pair, side, summary = line.split(" ", 2)
    cpu[(int(pair), side)] = json.loads(summary)["median_herald_cpu_ms_per_notify"]
pairs = sorted({p for p, _ in cpu})
ratios = [round(cpu[(p, "B")] / cpu[(p, "A")], 3) for p in pairs]
print(json.dumps({
    "benchmark": "matrix-ab", "pairs": len(pairs),
    "a_cpu_ms_per_notify": [cpu[(p, "A")] for p in pairs], "b_cpu_ms_per_notify": [cpu[(p, "B")] for p in pairs],
    "ratios_b_to_a": ratios, "median_ratio_b_to_a": statistics.median(ratios),
}))
PY
