#!/usr/bin/env bash
# One single-event publish and its delivery, beside the floor, in rounds: each round runs the
# floor program's three-thread form with Herald's store (Benchmarks/floor.sh's "3 threads, full":
# the durable work a gateway cannot skip, handed across an HTTP loop, a worker and a push loop)
# and then `herald-bench cost --scenario single` at the same rate, and prints both CPU figures
# per event, their ratio, and the median ratio of the rounds. With perf installed, each line also
# carries the syscalls, WAL syncs (fdatasync) and context switches per event, counted by kernel
# tracepoints: figures that do not move with the machine's speed or load.
#
#   Benchmarks/single-vs-floor.sh                 # 3 rounds, 500 events/s, 5,000 events each
#   ROUNDS=5 RATE=1000 Benchmarks/single-vs-floor.sh
#
# Needs release builds of herald and herald-bench (`swift build -c release --product herald &&
# swift build -c release --product herald-bench`), a C compiler and libsqlite3-dev. Everything
# runs on 127.0.0.1; each run is bounded by its event count.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-500}
EVENTS=${EVENTS:-5000}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18094}
BIN=${BIN:-$(swift build -c release --product herald --show-bin-path ${SCRATCH:+--scratch-path "$SCRATCH"})}
[ -x "$BIN/herald" ] && [ -x "$BIN/herald-bench" ] || { echo "build first: swift build -c release --product herald && swift build -c release --product herald-bench" >&2; exit 2; }
CC=${CC:-$(command -v cc || command -v clang || true)}
[ -n "$CC" ] || { echo "needs a C compiler (cc or clang)" >&2; exit 2; }
. Benchmarks/kernel-counts.sh
kernel_counts_available && counts=1 || counts=""

work=$(mktemp -d)
serve=""
trap 'kill $serve 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
. Benchmarks/floor/prepare.sh
floor_prepare "$work" "$PORT" "$BIN/herald" "$CC"

: >"$work/results"
for round in $(seq 1 "$ROUNDS"); do
  floor_store "$work"
  rm -f "$work/floor.counts"
  # The floor server exits once the load closes its connection; perf stat counts its whole life.
  FLOOR_STORE=full ${counts:+perf stat -x, -o "$work/floor.counts" -e "$KERNEL_EVENTS" --} \
    "$work/floor" serve "$work/floor.sqlite" "$PORT" 3 >"$work/floor.out" &
  serve=$!
  sleep 0.5
  timeout 600 "$work/floor" load "$PORT" "$RATE" $((EVENTS + 200))
  wait "$serve"; serve=""
  "$BIN/herald-bench" cost --herald "$BIN/herald" --scenario single --rate "$RATE" --events "$EVENTS" ${counts:+--counts} >"$work/herald.json"
  python3 - "$work/floor.out" "$(kernel_counts "$work/floor.counts")" "$work/herald.json" "$EVENTS" "$round" >>"$work/results" <<'PY'
import json, sys
floor = json.load(open(sys.argv[1]))
herald = json.load(open(sys.argv[3]))
events, n = int(sys.argv[4]), int(sys.argv[5])
line = {"round": n, "floor_cpu_ms_per_event": floor["cpu_ms_per_event"], "herald_cpu_ms_per_event": herald["cpu_ms_per_event_total"]}
line["ratio"] = round(line["herald_cpu_ms_per_event"] / line["floor_cpu_ms_per_event"], 2)
for name, count in json.loads(sys.argv[2]).items():  # the floor's whole life: its 200 warm-up events too
    line["floor_per_event_" + name] = round(count / (events + 200), 2)
for key, value in herald.items():
    if key.startswith("per_event_"):
        line["herald_" + key] = value
print(json.dumps(line))
PY
  tail -1 "$work/results"
done
python3 - "$work/results" "$RATE" "$EVENTS" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
median = lambda key: statistics.median(r[key] for r in rows)
print(json.dumps({
    "benchmark": "single-vs-floor", "rate": int(sys.argv[2]), "events": int(sys.argv[3]), "rounds": len(rows),
    "median_floor_cpu_ms_per_event": median("floor_cpu_ms_per_event"), "median_herald_cpu_ms_per_event": median("herald_cpu_ms_per_event"),
    "median_ratio": median("ratio"), "target_ratio": 1.5,
}))
PY
