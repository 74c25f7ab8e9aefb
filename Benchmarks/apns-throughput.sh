#!/usr/bin/env bash
# APNs delivery throughput: `herald send --repeat` against `herald mock-apns`, next to h2load's
# rate (C, one thread: issue 60's yardstick) and the Swift/NIO floor's (`herald-bench h2-floor`:
# the same pushes as hand-built HTTP/2 frames over NIOSSL) against the same simulator.
#
#   Benchmarks/apns-throughput.sh            # 60,000 pushes, concurrency 1,000 (the README table)
#   N=20000 Benchmarks/apns-throughput.sh    # a shorter run
#   CONNECTIONS=2 Benchmarks/apns-throughput.sh  # herald over 2 HTTP/2 connections (default 4)
#   PERF=/tmp/apns.perf Benchmarks/apns-throughput.sh  # and perf samples of one more clean run
#
# Needs release builds (`swift build -c release --product herald`, then `--product herald-bench`) and h2load
# (`apt-get install nghttp2-client`). Everything runs on 127.0.0.1; each run is bounded by N.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-60000}
CONCURRENCY=${CONCURRENCY:-1000}
HERALD=${HERALD:-$(swift build -c release --product herald --show-bin-path ${SCRATCH:+--scratch-path "$SCRATCH"})/herald}
[ -x "$HERALD" ] || { echo "build first: swift build -c release --product herald" >&2; exit 2; }
# The Swift/NIO floor: the same pushes as hand-built HTTP/2 frames (`herald-bench h2-floor`).
BENCH=${BENCH:-$(dirname "$HERALD")/herald-bench}
[ -x "$BENCH" ] || { echo "build first: swift build -c release --product herald-bench" >&2; exit 2; }
command -v h2load >/dev/null || { echo "install h2load: apt-get install nghttp2-client" >&2; exit 2; }

work=$(mktemp -d)
trap 'kill "$mock" 2>/dev/null || true; wait "$mock" 2>/dev/null || true; rm -rf "$work"' EXIT
. Benchmarks/mock-apns.sh
mock_apns_start "$HERALD" "$work"
token=$(printf '5a%.0s' $(seq 1 32))
# A ~200-byte alert payload.
payload='{"aps":{"alert":{"title":"New Message","body":"You have a new message from kaspa:qr…7h3x"},"sound":"default","mutable-content":1},"kasia":{"type":"contextual_message","txId":"0f4c2d9e"}}'
printf '%s' "$payload" >"$work/payload.json"

control() { curl -sf -X POST "http://127.0.0.1:$control/$1" ${2:+-d "$2"} >/dev/null; }

# h2load: the same requests with a real provider token.
jwt=$(python3 - "$key_path" "$key_id" "$team_id" <<'PY'
import base64, json, sys, time
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
key = serialization.load_pem_private_key(open(sys.argv[1], "rb").read(), None)
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
head = b64(json.dumps({"alg": "ES256", "kid": sys.argv[2]}, separators=(",", ":")).encode())
body = b64(json.dumps({"iss": sys.argv[3], "iat": int(time.time())}, separators=(",", ":")).encode())
r, s = decode_dss_signature(key.sign(f"{head}.{body}".encode(), ec.ECDSA(hashes.SHA256())))
print(f"{head}.{body}." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big")))
PY
)
h2run() {
  local out
  out=$(h2load -n "$N" -c 2 -m 500 -d "$work/payload.json" -H "authorization: bearer $jwt" -H "apns-topic: com.example.bench" \
    -H "apns-push-type: alert" -H "apns-priority: 10" "https://127.0.0.1:$port/3/device/$token" 2>&1)
  awk '/^status codes:/ {ok=$3} /^finished in/ {gsub(",", "", $4); rate=int($4)} END {print rate, ok}' <<<"$out"
}

herald_run() { # faults as JSON objects; prints "rate accepted rejected failed cpu_us"
  control reset
  for f in "$@"; do control faults "$f"; done
  local out
  out=$("$HERALD" send --token "$token" --payload-json "$payload" --repeat "$N" --concurrency "$CONCURRENCY" ${CONNECTIONS:+--connections "$CONNECTIONS"} || true)
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["per_second"], d["accepted"], sum(d["rejected"].values()), sum(d.get("failed", {}).values()), d["cpu_us_per_push"])' "$out"
}

# Rounds interleave the configurations so drift on a shared machine hits all alike.
ROUNDS=${ROUNDS:-3}
: >"$work/results"
for round in $(seq 1 "$ROUNDS"); do
  control reset
  read -r rate ok < <(h2run); echo "h2load $rate $ok - - -" >>"$work/results"
  control reset
  "$BENCH" h2-floor --port "$port" --ca "$work/ca.pem" --jwt "$jwt" --token "$token" --payload "$work/payload.json" --requests "$N" \
    --connections "${CONNECTIONS:-4}" --streams $((CONCURRENCY / ${CONNECTIONS:-4})) |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print("floor", d["per_second"], d["accepted"], "-", "-", d["cpu_us_per_push"])' >>"$work/results"
  echo "clean $(herald_run)" >>"$work/results"
  echo "dead20 $(herald_run '{"kind":"unregistered","every":5}')" >>"$work/results"
  echo "delay20 $(herald_run '{"kind":"delay","delay_ms":20}')" >>"$work/results"
  echo "delay20_dead20 $(herald_run '{"kind":"delay","delay_ms":20}' '{"kind":"unregistered","every":5}')" >>"$work/results"
done

# After the rounds, one more clean run under perf, not in the medians: the kernel's counts per push
# (syscalls, context switches: tracepoints, the same on a slow or loaded machine) and, with
# PERF=file, call samples for Benchmarks/perf-stages.py.
. Benchmarks/kernel-counts.sh
send=("$HERALD" send --token "$token" --payload-json "$payload" --repeat "$N" --concurrency "$CONCURRENCY" ${CONNECTIONS:+--connections "$CONNECTIONS"})
if kernel_counts_available; then
  control reset
  perf stat -x, -o "$work/counts" -e "$KERNEL_EVENTS" -- "${send[@]}" >/dev/null
fi
if [ -n "${PERF:-}" ]; then
  control reset
  perf record -F 999 -g -o "$PERF" -- "${send[@]}" >/dev/null 2>&1
fi

python3 - "$work/results" "$N" "$CONCURRENCY" "$ROUNDS" "$(kernel_counts "$work/counts")" <<'PY'
import collections, datetime, json, os, statistics, sys
rows = collections.defaultdict(list)
counts = {}
for line in open(sys.argv[1]):
    name, rate, *rest = line.split()
    rows[name].append(int(rate))
    counts[name] = rest
n, c, rounds = sys.argv[2:5]
labels = [
    ("h2load", f"h2load -n {n} -c 2 -m 500 (nghttp2, one thread)"),
    ("floor", f"herald-bench h2-floor: hand-built HTTP/2 frames over NIOSSL, {c} streams"),
    ("clean", "herald, 0 ms latency, 0% dead tokens"),
    ("dead20", "herald, 0 ms latency, 20% dead tokens"),
    ("delay20", "herald, 20 ms latency, 0% dead tokens"),
    ("delay20_dead20", "herald, 20 ms latency, 20% dead tokens"),
]
print(f"{n} pushes per run, herald --concurrency {c}, {os.cpu_count()} cores, median of {rounds} interleaved rounds, {datetime.date.today()}")
print()
print("| run | notifications/s (median) | min – max | accepted / rejected / failed (last round) | CPU µs a push (last round) |")
print("|---|---:|---|---|---:|")
med = {}
for key, label in labels:
    v = rows[key]
    med[key] = statistics.median(v)
    cnt = counts[key]
    shown = f"{cnt[0]} 2xx" if key in ("h2load", "floor") else " / ".join(cnt[:3])
    print(f"| {label} | {int(med[key])} | {min(v)} – {max(v)} | {shown} | {cnt[3].replace('-', '–')} |")
print()
print(f"herald / h2load = {med['clean'] / med['h2load']:.0%} (target >= 90%); herald / Swift floor = {med['clean'] / med['floor']:.0%}; "
      f"20%-dead / clean = {med['dead20'] / med['clean']:.0%} (target >= 80%)")
counted = json.loads(sys.argv[5])
if counted:
    print("herald send, per push: " + ", ".join(f"{name} {count / int(n):.2f}" for name, count in counted.items()))
PY
