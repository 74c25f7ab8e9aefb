#!/usr/bin/env bash
# What the dedupe keys held in memory cost a SQLite `herald serve` when it starts: a file with N
# Matrix events (each with its dedupe key) is opened, and the script prints the seconds until the
# server is ready and its resident memory then, beside the same for an empty file.
#
#   Benchmarks/dedupe-keys-startup.sh            # 1,000,000 keys
#   KEYS=200000 Benchmarks/dedupe-keys-startup.sh
#
# Needs a release build (`swift build -c release --product herald`). Everything runs on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${KEYS:-1000000}
HERALD=${HERALD:-$(swift build -c release --product herald --show-bin-path)/herald}
[ -x "$HERALD" ] || { echo "build first: swift build -c release --product herald" >&2; exit 2; }
work=$(mktemp -d)
serve=""
trap 'kill $serve "$mock" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
. Benchmarks/mock-apns.sh
mock_apns_start "$HERALD" "$work"
export HERALD_DATABASE_URL="sqlite:$work/herald.sqlite" HERALD_HTTP_PORT=${PORT:-18111} HERALD_ADMIN_PORT=0 \
  HERALD_MATRIX_APPS=im.bench.ios=apns

# start_serve LABEL: starts herald serve on the file, waits until ready, prints the time and RSS.
start_serve() {
  local t0 t1
  t0=$(date +%s.%N)
  "$HERALD" serve >"$work/serve.out" 2>"$work/serve.log" &
  serve=$!
  for _ in $(seq 1 6000); do grep -q '"ready":true' "$work/serve.out" 2>/dev/null && break; sleep 0.01; done
  t1=$(date +%s.%N)
  grep -q '"ready":true' "$work/serve.out" || { echo "herald serve did not start" >&2; cat "$work/serve.log" >&2; exit 1; }
  python3 -c 'import sys; print("{\"keys\": %s, \"ready_seconds\": %.2f, \"rss_mib\": %.1f}" % (sys.argv[1], float(sys.argv[3]) - float(sys.argv[2]), int(sys.argv[4]) / 1024))' \
    "$1" "$t0" "$t1" "$(awk '/VmRSS/{print $2}' "/proc/$serve/status")"
  kill "$serve"; wait "$serve" 2>/dev/null || true; serve=""
}

start_serve 0
# The events as `herald serve` writes them, straight into its schema.
python3 - "$work/herald.sqlite" "$KEYS" <<'PY'
import hashlib, sqlite3, sys, uuid
db, n = sqlite3.connect(sys.argv[1]), int(sys.argv[2])
db.execute("INSERT OR IGNORE INTO apps (id, created_at) VALUES ('im.bench.ios', 0)")
t = 1_800_000_000_000
db.executemany(
    "INSERT INTO events (id, app_id, template, push_type, priority, payload, created_at, expires_at, dedupe_key) VALUES (?, ?, 'matrix', 'alert', 10, ?, ?, ?, ?)",
    ((str(uuid.uuid4()), "im.bench.ios", b'{"aps":{"alert":"x"}}', t + i, t + i + 86_400_000, "matrix:" + hashlib.sha256(b"%d" % i).hexdigest()) for i in range(n)))
db.commit()
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
PY
start_serve "$KEYS"
