#!/usr/bin/env bash
# RSS of `herald serve` with both providers active: APNs to `herald mock-apns` and FCM to
# `herald mock-fcm` (each its own process, so their memory is not counted), 1,000 iOS and 1,000
# Android devices, 10,000 events (each to one device) delivered through both.
#
#   Benchmarks/rss-both-providers.sh
#
# Needs a release build (`swift build -c release --product herald`). Everything on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
HERALD=${HERALD:-$(swift build -c release --product herald --show-bin-path)/herald}
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"' EXIT
wait_line() { for _ in $(seq 1 200); do [ -s "$1" ] && return; sleep 0.1; done; echo "no ready line in $1" >&2; exit 1; }

"$HERALD" mock-apns --port 0 --sandbox-port 0 --control-port 0 --topic com.example.rss --cert-out "$work/apns" >"$work/apns.json" 2>/dev/null & pids+=($!)
"$HERALD" mock-fcm --port 0 --control-port 0 --credentials-out "$work/fcm" >"$work/fcm.json" 2>/dev/null & pids+=($!)
wait_line "$work/apns.json"; wait_line "$work/fcm.json"
eval "$(python3 -c '
import json, sys
a = json.load(open(sys.argv[1])); f = json.load(open(sys.argv[2]))
print("export HERALD_APNS_URL=https://127.0.0.1:%s HERALD_APNS_CA_FILE=%s HERALD_APNS_KEY_PATH=%s HERALD_APNS_KEY_ID=%s HERALD_APNS_TEAM_ID=%s HERALD_APNS_TOPIC=com.example.rss" % (a["port"], a["ca"], a["key_path"], a["key_id"], a["team_id"]))
print("export HERALD_FCM_CREDENTIALS_FILE=%s HERALD_FCM_URL=https://127.0.0.1:%s HERALD_FCM_CA_FILE=%s" % (f["credentials"], f["port"], f["ca"]))
print("APNS_CONTROL=%s FCM_CONTROL=%s" % (a["control_port"], f["control_port"]))
' "$work/apns.json" "$work/fcm.json")"
HERALD_DATABASE_URL="sqlite:$work/herald.sqlite" HERALD_HTTP_PORT=0 HERALD_PUBLISH_KEYS=publisher-key-00001 \
  HERALD_REGISTRATION_RATE=0 HERALD_PUBLISH_RATE=0 HERALD_LOG_LEVEL=warning "$HERALD" serve >"$work/serve.json" 2>"$work/serve.log" & serve=$!; pids+=($serve)
wait_line "$work/serve.json"
api=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["http"])' "$work/serve.json")
python3 - "$api" "$serve" "$APNS_CONTROL" "$FCM_CONTROL" <<'PY'
import json, sys, time, urllib.request
api, pid, apns, fcm = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3], sys.argv[4]
if not api.startswith("http"): api = "http://" + api
def post(path, body, key=None):
    req = urllib.request.Request(api + path, json.dumps(body).encode(), {"content-type": "application/json", **({"authorization": "Bearer " + key} if key else {})})
    return urllib.request.urlopen(req).status
def rss():
    fields = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status"))
    return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024
def count(port):
    return json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats"))["accepted"]
idle = rss()
tokens = [("%064x" % (i + 1), "ios") if i % 2 == 0 else ("fcm-rss_%d:" % i + "R" * 140, "android") for i in range(2000)]
for i, (token, platform) in enumerate(tokens):
    post("/v1/push/register", {"device_token": token, "platform": platform, "watched_addresses": [f"session:s{i}"]})
for start in range(0, 10000, 250):
    events = [{"template": "custom", "targets": {"keys": [f"session:s{n % 2000}"]}, "fields": {"aps": {"alert": {"title": "New Message", "body": f"n{n}"}}}} for n in range(start, start + 250)]
    post("/v1/events:batch", {"events": events}, "publisher-key-00001")
deadline = time.time() + 300
while time.time() < deadline and count(apns) + count(fcm) < 10000: time.sleep(0.2)
busy = rss()
print(json.dumps({"idle_rss_mib": idle[0], "after_rss_mib": busy[0], "peak_rss_mib": busy[1], "apns_accepted": count(apns), "fcm_accepted": count(fcm)}))
PY
