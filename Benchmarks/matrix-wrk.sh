#!/usr/bin/env bash
# Matrix notifies with a load generator that costs little: wrk (C, LuaJIT) posts Synapse-shaped
# notifies to a release `herald serve` (SQLite, synchronous=FULL) whose APNs is `herald mock-apns`
# in its own process, so the CPU read from /proc is Herald's alone. Every notify has a new
# event_id; 1,000 pushkeys.
#
#   Benchmarks/matrix-wrk.sh                  # 32 connections, 3 rounds of 10 s, then their median
#   CONNECTIONS=16 Benchmarks/matrix-wrk.sh   # the README table: 16 and 64
#   SECONDS_=5 ROUNDS=1 CONNECTIONS=8 Benchmarks/matrix-wrk.sh
#   PERF=/tmp/matrix.perf Benchmarks/matrix-wrk.sh   # perf samples of the first round: python3 Benchmarks/perf-stages.py /tmp/matrix.perf
#
# Needs a release build (`swift build -c release --product herald`) and wrk (`apt-get install wrk`).
# Everything runs on 127.0.0.1; each run is bounded by its duration.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${SECONDS_:-10}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-32}
PORT=${PORT:-18092}
HERALD=${HERALD:-$(swift build -c release --product herald --show-bin-path ${SCRATCH:+--scratch-path "$SCRATCH"})/herald}
[ -x "$HERALD" ] || { echo "build first: swift build -c release --product herald" >&2; exit 2; }
command -v wrk >/dev/null || { echo "install wrk: apt-get install wrk" >&2; exit 2; }

work=$(mktemp -d)
serve=""
trap 'kill $serve "$mock" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
. Benchmarks/mock-apns.sh
mock_apns_start "$HERALD" "$work"
matrix_notify_script "$work/notify.lua"
( matrix_serve_env "$work" "$PORT"; exec "$HERALD" serve ) >"$work/serve.out" 2>"$work/serve.log" &
serve=$!
for _ in $(seq 1 100); do grep -q '"ready":true' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Warm-up: connections, the first JWT, every pushkey admitted once.
wrk -t1 -c8 -d2s -s "$work/notify.lua" "http://127.0.0.1:$PORT" >/dev/null
sleep 1
# Rounds on the same server (each notify has a new event_id); COUNTS=1 (or perf on the PATH) adds
# herald serve's syscalls, WAL syncs and context switches per notify, counted by kernel
# tracepoints: counts that do not move with the machine's speed or load.
. Benchmarks/kernel-counts.sh
[ -z "${COUNTS:-}" ] && kernel_counts_available && COUNTS=1
: >"$work/rounds"
for round in $(seq 1 "$ROUNDS"); do
  rm -f "$work/counts"
  h0=$(cpu $serve); m0=$(cpu $mock)
  # PERF=file: perf samples of herald serve during the first round (Benchmarks/perf-stages.py groups them).
  [ -n "${PERF:-}" ] && [ "$round" = 1 ] && { perf record -F 999 -g -o "$PERF" -p "$serve" -- sleep "$DURATION" 2>/dev/null & }
  [ -n "${COUNTS:-}" ] && { perf stat -x, -o "$work/counts" -e "$KERNEL_EVENTS" -p "$serve" -- sleep "$DURATION" 2>/dev/null & }
  wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$work/notify.lua" "http://127.0.0.1:$PORT" >"$work/wrk.out"
  sleep 2  # the last pushes reach the simulator; perf has written its counts
  h1=$(cpu $serve); m1=$(cpu $mock)
  python3 - "$work/wrk.out" "$DURATION" "$CONNECTIONS" "$h0" "$h1" "$m0" "$m1" "$(kernel_counts "$work/counts")" "$round" <<'PY' | tee -a "$work/rounds"
import json, re, sys
out = open(sys.argv[1]).read()
n = int(re.search(r"(\d+) requests in", out).group(1))
seconds, connections = float(sys.argv[2]), int(sys.argv[3])
h0, h1, m0, m1 = map(float, sys.argv[4:8])
ticks = 100.0  # /proc/<pid>/stat counts CPU in clock ticks (USER_HZ)
p = lambda q: (re.search(r"\s%s%%\s+(\S+)" % q, out) or [None, None])[1]
print(json.dumps({
    "benchmark": "matrix-wrk", "round": int(sys.argv[9]), "notifies": n, "connections": connections, "notifies_per_second": round(n / seconds),
    "herald_cpu_ms_per_notify": round((h1 - h0) / ticks * 1000 / n, 3),
    "mock_apns_cpu_ms_per_notify": round((m1 - m0) / ticks * 1000 / n, 3),
    "non_2xx": "Non-2xx" in out, "answer_p50": p("50"), "answer_p99": p("99"),
    **{"per_notify_" + name: round(count / n, 2) for name, count in json.loads(sys.argv[8]).items()},
}))
PY
done
python3 - "$work/rounds" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
median = statistics.median(r["herald_cpu_ms_per_notify"] for r in rows)
print(json.dumps({
    "benchmark": "matrix-wrk", "connections": rows[0]["connections"], "rounds": len(rows),
    "median_notifies_per_second": statistics.median(r["notifies_per_second"] for r in rows),
    "median_herald_cpu_ms_per_notify": median, "target_ms": 0.15, "median_ratio_to_target": round(median / 0.15, 2),
    "any_non_2xx": any(r["non_2xx"] for r in rows),
    **({"median_syscalls_per_notify": statistics.median(r["per_notify_sys_enter"] for r in rows)} if "per_notify_sys_enter" in rows[0] else {}),
}))
PY
