#!/usr/bin/env bash
# The floor under a single event's CPU (issue 18): Benchmarks/floor/floor.c does only the work
# Herald cannot skip, in C, with no TLS, HTTP/2, JSON or allocation per event: read a request,
# find the device by its token, commit the event and its delivery (and the last push's outcome)
# in Herald's own schema with synchronous=FULL, answer, send the push to a peer, read the reply.
# It prints the server's CPU ms per event (getrusage, after 200 warm-up events) for one thread and
# for three (an HTTP loop, a worker and a push loop, as an asynchronous server hands an event
# over), each with the store as Herald runs it (full), without a sync per commit (normal) and
# without a store (none), so the figure splits into disk, SQLite and network.
#
#   Benchmarks/floor.sh                       # 500 events/s, 5,000 events per line
#   RATE=1500 Benchmarks/floor.sh
#
# Needs a C compiler (cc, or the Swift toolchain's clang), libsqlite3-dev, and a release build of
# herald for the schema (`swift build -c release --product herald`). Everything runs on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-500}
EVENTS=${EVENTS:-5000}
PORT=${PORT:-18093}
HERALD=${HERALD:-$(swift build -c release --product herald --show-bin-path ${SCRATCH:+--scratch-path "$SCRATCH"})/herald}
[ -x "$HERALD" ] || { echo "build first: swift build -c release --product herald" >&2; exit 2; }
CC=${CC:-$(command -v cc || command -v clang || true)}
[ -n "$CC" ] || { echo "needs a C compiler (cc or clang)" >&2; exit 2; }

work=$(mktemp -d)
serve=""
trap 'kill $serve 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
. Benchmarks/floor/prepare.sh
floor_prepare "$work" "$PORT" "$HERALD" "$CC"

for threads in 1 3; do
  for store in full normal none; do
    floor_store "$work"
    FLOOR_STORE=$store "$work/floor" serve "$work/floor.sqlite" "$PORT" "$threads" >"$work/floor.out" &
    serve=$!
    timeout 600 "$work/floor" load "$PORT" "$RATE" $((EVENTS + 200))
    wait "$serve"; serve=""
    echo "{\"benchmark\":\"floor\",\"rate\":$RATE,\"threads\":$threads,\"store\":\"$store\",$(cut -c2- "$work/floor.out")"
  done
done
