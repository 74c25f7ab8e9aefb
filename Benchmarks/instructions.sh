#!/usr/bin/env bash
# Instructions per event, counted by valgrind's callgrind: a figure that does not move with the
# machine's speed or load (the same command gives the same count within a few tenths of a percent),
# with the stage table of where they go (Benchmarks/perf-stages.py's grouping). Three paths, each
# beside what does the same job with less:
#   matrix  Synapse-shaped notifies from wrk (16 connections, 10 s) to `herald serve` (SQLite,
#           synchronous=FULL, signed), its instructions from the first measured notify to the
#           last push; `herald mock-apns` runs natively in its own process.
#   single  `herald-bench cost --scenario single` (publish over HTTP, commit, push, signed) at a
#           rate callgrind keeps up with, beside the floor program (Benchmarks/floor) doing the
#           durable work of the same events in Herald's schema.
#   apns    `herald send --repeat` against `herald mock-apns`, beside h2load sending the same
#           requests and `herald-bench h2-floor` (the same pushes as hand-built HTTP/2 frames over
#           NIOSSL): the difference of a long and a short run, so start-up is not counted.
#
#   Benchmarks/instructions.sh                 # all three
#   Benchmarks/instructions.sh matrix          # one
#   CONNECTIONS=2 Benchmarks/instructions.sh apns   # herald send over 2 connections instead of 4
#
# KEEP=1 keeps the callgrind files (callgrind_annotate reads them) and says where.
#
# Needs valgrind, release builds of herald and herald-bench, wrk, h2load, a C compiler and
# libsqlite3-dev. Everything runs on 127.0.0.1; every run is bounded by its count or duration.
#
# Under valgrind: Debian 12's valgrind 3.19 reads neither Swift 6.3's DWARF 5 (so the binaries
# are copied without their debug sections; the symbol table stays) nor an async `main` parked in
# `dispatch_main()` (Benchmarks/valgrind/main-queue.c, preloaded, serves the main queue instead).
# Its virtual CPU has no ADX or AVX-512, so BoringSSL takes its portable code: signing counts more
# instructions here than it runs natively (perf's tables give its native share of time).
set -euo pipefail
cd "$(dirname "$0")/.."
PATHS=${*:-matrix single apns}
BIN=${BIN:-$(swift build -c release --product herald --show-bin-path ${SCRATCH:+--scratch-path "$SCRATCH"})}
[ -x "$BIN/herald" ] && [ -x "$BIN/herald-bench" ] || { echo "build first: swift build -c release --product herald && swift build -c release --product herald-bench" >&2; exit 2; }
for tool in valgrind callgrind_control wrk h2load; do
  command -v $tool >/dev/null || { echo "needs $tool: apt-get install valgrind wrk nghttp2-client" >&2; exit 2; }
done
CC=${CC:-$(command -v cc || command -v clang || true)}
[ -n "$CC" ] || { echo "needs a C compiler (cc or clang)" >&2; exit 2; }

work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] && echo "kept $work" >&2 || rm -rf "$work"' EXIT
objcopy --strip-debug "$BIN/herald" "$work/herald"
swift_lib=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")/lib/swift/linux  # libdispatch
"$CC" -shared -fPIC -O2 -o "$work/main-queue.so" Benchmarks/valgrind/main-queue.c -L"$swift_lib" -Wl,-rpath,"$swift_lib" -ldispatch
callgrind() { # callgrind OUT [valgrind options] command...: replaces its shell, so call it in a subshell or with &
  local out=$1; shift
  LD_PRELOAD="$work/main-queue.so" exec valgrind --tool=callgrind --callgrind-out-file="$out" "$@" 2>>"$work/valgrind.log"
}
callgrind_sync() { (callgrind "$@"); }
stages() { python3 Benchmarks/perf-stages.py --callgrind "$@"; }
. Benchmarks/mock-apns.sh
simulator() { mock_apns_start "$BIN/herald" "$work"; pids+=("$mock"); }  # natively, not under valgrind

matrix() {
  simulator
  matrix_notify_script "$work/notify.lua"
  local http=18097
  ( matrix_serve_env "$work" $http; callgrind "$work/matrix.cg" --instr-atstart=no "$work/herald" serve ) >"$work/serve.out" 2>"$work/serve.log" &
  local serve=$!; pids+=($serve)
  for _ in $(seq 1 600); do grep -q '"ready":true' "$work/serve.out" 2>/dev/null && break; sleep 0.2; done
  wrk -t1 -c8 -d5s -s "$work/notify.lua" "http://127.0.0.1:$http" >/dev/null  # warm-up: every pushkey admitted once
  sleep 2
  callgrind_control --instr=on $serve >/dev/null 2>&1
  wrk -t1 -c16 -d10s -s "$work/notify.lua" "http://127.0.0.1:$http" >"$work/wrk.out"
  sleep 3  # the last pushes
  callgrind_control --dump $serve >/dev/null 2>&1
  local n; n=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  grep -q Non-2xx "$work/wrk.out" && { echo "matrix: notifies were refused" >&2; return 1; }
  echo "## matrix: $n notifies (16 connections), herald serve"
  stages "$work/matrix.cg.1" --events "$n"
  kill $serve; wait $serve 2>/dev/null || true
}

single() {
  local rate=40 small=400 big=1600
  cat >"$work/herald-wrapper" <<EOF
#!/bin/sh
# herald serve under callgrind, its instrumentation off until herald-bench turns it on.
if [ "\$1" = serve ]; then
  LD_PRELOAD="$work/main-queue.so" exec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/single.cg" "$work/herald" "\$@" 2>>"$work/valgrind.log"
fi
exec "$BIN/herald" "\$@"
EOF
  chmod +x "$work/herald-wrapper"
  "$BIN/herald-bench" cost --herald "$work/herald-wrapper" --scenario single --rate $rate --events $big --callgrind >"$work/single.json"
  echo "## single: $big events at $rate/s, herald serve"
  stages "$work/single.cg.1" --events $big
  . Benchmarks/floor/prepare.sh
  floor_prepare "$work" 18096 "$BIN/herald" "$CC"
  for n in $small $big; do
    floor_store "$work"
    FLOOR_STORE=full callgrind "$work/floor-$n.cg" "$work/floor" serve "$work/floor.sqlite" 18095 3 >"$work/floor.out" &
    local floor=$!
    sleep 5  # it listens (the floor ends when its load's connection closes: no probe)
    timeout 600 "$work/floor" load 18095 $rate $n
    wait $floor
  done
  echo "## single: the floor program (3 threads, synchronous=FULL), $((big - small)) events"
  stages "$work/floor-$big.cg" --minus "$work/floor-$small.cg" --events $((big - small))
}

apns() {
  simulator
  local token payload small=2000 big=12000
  token=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
  payload='{"aps":{"alert":{"title":"Bench","body":"hello"}}}'
  printf '%s' "$payload" >"$work/payload.json"
  for n in $small $big; do
    callgrind_sync "$work/send-$n.cg" "$work/herald" send --token "$token" --payload-json "$payload" --repeat $n --concurrency 1000 ${CONNECTIONS:+--connections "$CONNECTIONS"} >"$work/send-$n.json"
  done
  echo "## apns: herald send, $((big - small)) pushes (concurrency 1,000)"
  stages "$work/send-$big.cg" --minus "$work/send-$small.cg" --events $((big - small))
  # h2load with a provider token, made by apns-throughput.sh's own code.
  sed -n '/^jwt=\$(python3 - /,/^PY$/p' Benchmarks/apns-throughput.sh | sed '1d;$d' >"$work/jwt.py"
  local jwt; jwt=$(python3 "$work/jwt.py" "$key_path" "$key_id" "$team_id")
  for n in $small $big; do
    valgrind --tool=callgrind --callgrind-out-file="$work/h2load-$n.cg" h2load -n $n -c 2 -m 500 -d "$work/payload.json" \
      -H "authorization: bearer $jwt" -H "apns-topic: com.example.bench" -H "apns-push-type: alert" -H "apns-priority: 10" \
      "https://127.0.0.1:$port/3/device/$token" >"$work/h2load-$n.out" 2>>"$work/valgrind.log"
    grep -q "succeeded, 0 failed" "$work/h2load-$n.out" || { echo "apns: h2load's requests failed" >&2; cat "$work/h2load-$n.out" >&2; return 1; }
  done
  echo "## apns: h2load -c 2 -m 500, $((big - small)) pushes"
  stages "$work/h2load-$big.cg" --minus "$work/h2load-$small.cg" --events $((big - small))
  # The Swift/NIO floor: the same pushes as hand-built HTTP/2 frames over NIOSSL.
  objcopy --strip-debug "$BIN/herald-bench" "$work/herald-bench"
  for n in $small $big; do
    callgrind_sync "$work/floor-$n.cg" "$work/herald-bench" h2-floor --port "$port" --ca "$work/ca.pem" --jwt "$jwt" --token "$token" \
      --payload "$work/payload.json" --requests $n >"$work/floor-$n.json"
    grep -q "\"accepted\":$n," "$work/floor-$n.json" || { echo "apns: h2-floor's pushes failed" >&2; cat "$work/floor-$n.json" >&2; return 1; }
  done
  echo "## apns: herald-bench h2-floor (4 connections, 250 streams each), $((big - small)) pushes"
  stages "$work/floor-$big.cg" --minus "$work/floor-$small.cg" --events $((big - small))
}

for path in $PATHS; do
  case $path in
    matrix | single | apns) $path ;;
    *) echo "unknown path $path: matrix, single or apns" >&2; exit 2 ;;
  esac
  echo
done
