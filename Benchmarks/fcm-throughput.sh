#!/usr/bin/env bash
# FCM delivery throughput: `herald send --platform android --repeat` against `herald mock-fcm`,
# next to h2load's raw rate against the same simulator (the physical limit of this machine).
#
#   Benchmarks/fcm-throughput.sh            # 60,000 messages, concurrency 1,000 (the README table)
#   N=20000 Benchmarks/fcm-throughput.sh    # a shorter run
#
# Needs a release build (`swift build -c release --product herald`), h2load
# (`apt-get install nghttp2-client`) and google-auth (pulled in by `pip install firebase-admin`):
# Google's own library exchanges the service account's grant for h2load's access token.
# Everything runs on 127.0.0.1; each run is bounded by N.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-60000}
CONCURRENCY=${CONCURRENCY:-1000}
HERALD=${HERALD:-$(swift build -c release --product herald --show-bin-path ${SCRATCH:+--scratch-path "$SCRATCH"})/herald}
[ -x "$HERALD" ] || { echo "build first: swift build -c release --product herald" >&2; exit 2; }
command -v h2load >/dev/null || { echo "install h2load: apt-get install nghttp2-client" >&2; exit 2; }

work=$(mktemp -d)
trap 'kill "$mock" 2>/dev/null || true; wait "$mock" 2>/dev/null || true; rm -rf "$work"' EXIT
"$HERALD" mock-fcm --port 0 --control-port 0 --project-id herald-bench --credentials-out "$work" >"$work/ready.json" 2>"$work/mock.log" &
mock=$!
for _ in $(seq 1 100); do [ -s "$work/ready.json" ] && break; sleep 0.1; done
read -r port control < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["port"], d["control_port"])' "$work/ready.json")
set -a; . "$work/herald.env"; set +a
export HERALD_LOG_LEVEL=warning
token="bench-device_1:$(printf 'A%.0s' $(seq 1 140))"
message() { printf '{"message":{"token":"%s","data":{"title":"New Message","body":"You have a new message from kaspa:qr…7h3x","kasia":"{\\"type\\":\\"contextual_message\\",\\"txId\\":\\"0f4c2d9e\\"}"},"android":{"priority":"high","ttl":"86400s"}}}' "$token"; }
message >"$work/message.json"

control() { curl -sf -X POST "http://127.0.0.1:$control/$1" ${2:+-d "$2"} >/dev/null; }

access_token=$(REQUESTS_CA_BUNDLE="$HERALD_FCM_CA_FILE" python3 - "$HERALD_FCM_CREDENTIALS_FILE" <<'PY'
import sys, google.auth.transport.requests
from google.oauth2 import service_account
creds = service_account.Credentials.from_service_account_file(sys.argv[1], scopes=["https://www.googleapis.com/auth/firebase.messaging"])
creds.refresh(google.auth.transport.requests.Request())
print(creds.token)
PY
)
h2run() {
  local out
  out=$(h2load -n "$N" -c 2 -m 500 -d "$work/message.json" -H "authorization: Bearer $access_token" \
    -H "content-type: application/json" "https://127.0.0.1:$port/v1/projects/herald-bench/messages:send" 2>&1)
  awk '/^status codes:/ {ok=$3} /^finished in/ {gsub(",", "", $4); rate=int($4)} END {print rate, ok}' <<<"$out"
}

herald_run() { # faults as JSON objects; prints "rate accepted rejected failed cpu_us"
  control reset
  for f in "$@"; do control faults "$f"; done
  local out
  out=$("$HERALD" send --platform android --token "$token" --payload-json '{"title":"New Message","body":"You have a new message from kaspa:qr…7h3x","kasia":"{\"type\":\"contextual_message\",\"txId\":\"0f4c2d9e\"}"}' \
    --repeat "$N" --concurrency "$CONCURRENCY" || true)
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["per_second"], d["accepted"], sum(d["rejected"].values()), sum(d.get("failed", {}).values()), d["cpu_us_per_push"])' "$out"
}

# Rounds interleave the configurations so drift on a shared machine hits all alike.
ROUNDS=${ROUNDS:-3}
: >"$work/results"
for round in $(seq 1 "$ROUNDS"); do
  control reset
  read -r rate ok < <(h2run); echo "h2load $rate $ok - - -" >>"$work/results"
  echo "clean $(herald_run)" >>"$work/results"
  echo "dead20 $(herald_run '{"kind":"unregistered","every":5}')" >>"$work/results"
done

python3 - "$work/results" "$N" "$CONCURRENCY" "$ROUNDS" <<'PY'
import statistics, sys, collections, datetime, os
rows = collections.defaultdict(list)
counts = {}
for line in open(sys.argv[1]):
    name, rate, *rest = line.split()
    rows[name].append(int(rate))
    counts[name] = rest
n, c, rounds = sys.argv[2:5]
labels = [
    ("h2load", f"h2load -n {n} -c 2 -m 500 (raw HTTP/2 limit)"),
    ("clean", "herald send --platform android, 0% dead tokens"),
    ("dead20", "herald send --platform android, 20% dead tokens (404 UNREGISTERED)"),
]
print(f"{n} messages per run, herald --concurrency {c}, {os.cpu_count()} cores, median of {rounds} interleaved rounds, {datetime.date.today()}")
print()
print("| run | messages/s (median) | min – max | accepted / rejected / failed (last round) | CPU µs per message (last round) |")
print("|---|---:|---|---|---:|")
med = {}
for key, label in labels:
    v = rows[key]
    med[key] = statistics.median(v)
    cnt = counts[key]
    shown = f"{cnt[0]} 2xx" if key == "h2load" else " / ".join(cnt[:3])
    cpu = "–" if key == "h2load" else cnt[3]
    print(f"| {label} | {int(med[key])} | {min(v)} – {max(v)} | {shown} | {cpu} |")
print()
print(f"herald / h2load = {med['clean'] / med['h2load']:.0%} (target >= 60%); "
      f"20%-dead / clean = {med['dead20'] / med['clean']:.0%} (target >= 80%)")
PY
