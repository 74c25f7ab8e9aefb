# Sourced by the benchmark scripts that push to `herald mock-apns`.
# mock_apns_start HERALD WORK: starts the simulator (its CA and provider key written to WORK), waits
# until it is ready, sets mock (its pid), port, control, key_id, team_id and key_path, and exports
# the HERALD_APNS_* settings that point `herald send` or `herald serve` at it.
mock_apns_start() {
  local herald=$1 work=$2
  "$herald" mock-apns --port 0 --sandbox-port 0 --control-port 0 --topic com.example.bench --cert-out "$work" >"$work/ready.json" 2>"$work/mock.log" &
  mock=$!
  for _ in $(seq 1 100); do [ -s "$work/ready.json" ] && break; sleep 0.1; done
  read -r port control key_id team_id key_path < <(python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); print(d["port"], d["control_port"], d["key_id"], d["team_id"], d["key_path"])' "$work/ready.json")
  export HERALD_APNS_URL="https://127.0.0.1:$port" HERALD_APNS_CA_FILE="$work/ca.pem" HERALD_APNS_KEY_PATH="$key_path" \
    HERALD_APNS_KEY_ID="$key_id" HERALD_APNS_TEAM_ID="$team_id" HERALD_APNS_TOPIC=com.example.bench HERALD_LOG_LEVEL=warning
}

# matrix_serve_env WORK PORT: exports what `herald serve` needs to take Synapse's notifies on PORT:
# SQLite in WORK, the Matrix app im.bench.ios on APNs, and no per-homeserver rate limit (all the
# load comes from one address). Call it in the subshell that runs the server.
matrix_serve_env() {
  export HERALD_DATABASE_URL="sqlite:$1/herald.sqlite" HERALD_HTTP_PORT="$2" HERALD_ADMIN_PORT=0 \
    HERALD_MATRIX_APPS=im.bench.ios=apns HERALD_MATRIX_RATE=0 HERALD_PUBLISH_KEYS=bench-publisher-key-0001
}

# matrix_notify_script FILE: the wrk script of Synapse-shaped notifies: 1,000 pushkeys (base64 of 32
# bytes), a new event id per request and thread.
matrix_notify_script() {
  python3 - "$1" <<'PY'
import base64, hashlib, sys
keys = ",".join('"%s"' % base64.b64encode(hashlib.sha256(b"dev%d" % i).digest()).decode() for i in range(1000))
open(sys.argv[1], "w").write('''
local keys = {%s}
local counter = 0
local threads = {}
function setup(thread) thread:set("tid", #threads); table.insert(threads, thread) end
function init(args) tid = tonumber(tid) or 0; run = os.time() %% 100000 end
request = function()
  counter = counter + 1
  local n = tid * 100000000 + counter
  local body = '{"notification":{"event_id":"$wrk' .. run .. '_' .. n .. '","room_id":"!room' .. (n %% 97) .. ':bench.example",' ..
    '"type":"m.room.message","sender":"@alice:bench.example","sender_display_name":"Alice","room_name":"Bench room","prio":"high",' ..
    '"content":{"msgtype":"m.text","body":"message ' .. n .. '"},"counts":{"unread":1},' ..
    '"devices":[{"app_id":"im.bench.ios","pushkey":"' .. keys[(n %% 1000) + 1] .. '","pushkey_ts":1700000000,"data":{}}]}}'
  return wrk.format("POST", "/_matrix/push/v1/notify", {["Content-Type"] = "application/json"}, body)
end
''' % keys)
PY
}
