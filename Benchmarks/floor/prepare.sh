# Sourced by Benchmarks/floor.sh and Benchmarks/single-vs-floor.sh.
# floor_prepare WORK PORT HERALD CC: compiles the floor program into WORK/floor and makes Herald's
# schema, by Herald's own migrations, in WORK/schema.sqlite (herald serve on a new file until it
# is ready, then stopped).
floor_prepare() {
  local work=$1 port=$2 herald=$3 cc=$4 pid
  "$cc" -O2 -o "$work/floor" Benchmarks/floor/floor.c -lsqlite3 -lpthread
  HERALD_DATABASE_URL="sqlite:$work/schema.sqlite" HERALD_HTTP_PORT="$port" HERALD_ADMIN_PORT=0 \
    HERALD_LOG_LEVEL=warning "$herald" serve >"$work/serve.out" 2>"$work/serve.log" &
  pid=$!
  for _ in $(seq 1 100); do grep -q '"ready":true' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
  grep -q '"ready":true' "$work/serve.out" || { kill "$pid" 2>/dev/null; cat "$work/serve.log" >&2; return 1; }
  kill -TERM "$pid"; wait "$pid" || true
}

# floor_store WORK: a fresh WORK/floor.sqlite with Herald's schema (which may still be in the WAL
# Herald left).
floor_store() {
  local work=$1
  rm -f "$work"/floor.sqlite*
  cp "$work/schema.sqlite" "$work/floor.sqlite"
  if [ -f "$work/schema.sqlite-wal" ]; then cp "$work/schema.sqlite-wal" "$work/floor.sqlite-wal"; fi
}
