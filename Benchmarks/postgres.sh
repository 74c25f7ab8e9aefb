#!/usr/bin/env bash
# Several Herald instances on one PostgreSQL (issue: "PostgreSQL store and several Herald
# instances on one database"). Starts a throwaway PostgreSQL server from Debian's packages
# (.ci/postgres-start), then, on a fresh database each time:
#   publish       `herald-bench publish` with 1, 2 and 3 `herald serve` instances, requests
#                 round-robin: events/s accepted (durable) and notifications/s delivered
#   route-lookup  the watch-key lookup with 1,000,000 devices x 10 keys, p50/p99
# Everything runs on this machine's cores: with 2 cores the curve shows CPU contention, not scale-out.
#
#   Benchmarks/postgres.sh                  # ROUNDS=1 by default (the prefill of 10M keys takes minutes)
#   ROUNDS=3 Benchmarks/postgres.sh publish
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-1}
PORT=${PORT:-55435}
swift build -c release --product herald >&2
swift build -c release --product herald-bench >&2
bin=$(swift build -c release --show-bin-path)
benchmarks=("$@")
[ ${#benchmarks[@]} -gt 0 ] || benchmarks=(publish route-lookup)

pg=$(mktemp -d)
url=$(.ci/postgres-start "$pg/pg" "$PORT")
trap '"$pg/pg/stop" >/dev/null 2>&1 || true; rm -rf "$pg"' EXIT
fresh() {  # prints the URL of a new, empty database (called in a subshell: the name must not need state)
  local name="bench_$(date +%s%N)"
  psql -q "$url" -c "CREATE DATABASE $name" >/dev/null
  echo "${url%/postgres}/$name"
}

for benchmark in "${benchmarks[@]}"; do
  case "$benchmark" in
    publish)
      for instances in 1 2 3; do
        for round in $(seq 1 "$ROUNDS"); do
          "$bin/herald-bench" publish --herald "$bin/herald" --postgres-url "$(fresh)" --instances "$instances"
        done
      done ;;
    route-lookup)
      # 1,000,000 devices x 10 watch keys written with generate_series (registering them one
      # transaction of 10,000 at a time takes most of an hour here), into Herald's own schema.
      for round in $(seq 1 "$ROUNDS"); do
        db=$(fresh)
        HERALD_DATABASE_URL="$db" "$bin/herald" migrate >/dev/null
        psql -q "$db" <<'SQL'
INSERT INTO apps (id, created_at) VALUES ('default', 0);
INSERT INTO devices (id, app_id, platform, token, environment, device_id, created_at, updated_at, last_seen, disabled_reason)
  SELECT g, 'default', 'ios', lpad(to_hex(g), 64, '0'), 'sandbox', NULL, 0, 0, 0, NULL FROM generate_series(0, 999999) g;
INSERT INTO watch_keys (device_row, role, key)
  SELECT d, 'watch', 'session:d' || d || 'k' || k FROM generate_series(0, 999999) d, generate_series(0, 9) k;
ANALYZE;
SQL
        "$bin/herald-bench" route-lookup --herald "$bin/herald" --postgres-url "$db" --prefilled
      done ;;
  esac
done
