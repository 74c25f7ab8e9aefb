#!/usr/bin/env bash
# The gateway's benchmarks (issue: "The Herald gateway"): a release `herald serve` on a fresh
# SQLite file, delivering over TLS + HTTP/2 to an APNs simulator inside `herald-bench`.
#
#   Benchmarks/gateway.sh                 # all four, 3 rounds each, medians (the README table)
#   ROUNDS=1 Benchmarks/gateway.sh latency fanout
#
# publish  events/s accepted through /v1/events:batch (60,000 events, one device each)
# latency  publish -> arrival at the simulator, p50/p99, single events open-loop at 1,000/s for 10 s
# fanout   one event to 100,000 devices watching one key: time to commit (the 202), time until all arrive
# memory   RSS of herald serve with 1,000,000 registered devices, idle and after 10,000 registrations + events
#
# Everything runs on 127.0.0.1 and every run is bounded in count and time.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
scratch=${SCRATCH:+--scratch-path "$SCRATCH"}
swift build -c release --product herald $scratch >&2
swift build -c release --product herald-bench $scratch >&2
bin=$(swift build -c release --show-bin-path $scratch)
benchmarks=("$@")
[ ${#benchmarks[@]} -gt 0 ] || benchmarks=(publish latency fanout memory)

for benchmark in "${benchmarks[@]}"; do
  for round in $(seq 1 "$ROUNDS"); do
    "$bin/herald-bench" "$benchmark" --herald "$bin/herald"
  done | tee /dev/stderr | python3 -c '
import json, statistics, sys
runs = [json.loads(line) for line in sys.stdin if line.startswith("{")]
keys = [k for k, v in runs[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
median = {k: round(statistics.median(r[k] for r in runs), 3) for k in keys}
spread = {k: [round(min(r[k] for r in runs), 3), round(max(r[k] for r in runs), 3)] for k in keys}
ok = all(all(v for k, v in r.items() if k.startswith("all_")) for r in runs)
print(json.dumps({"benchmark": runs[0]["benchmark"], "rounds": len(runs), "all_complete": ok, "median": median, "min_max": spread}, sort_keys=True))
'
done
