#!/usr/bin/env bash
# HeraldKit's benchmarks (issue: "HeraldKit"), release builds, medians of ROUNDS (default 3):
#   decrypts/s   Kasia decrypt of a 200-byte message (one core)
#   extension/s  the whole extension function: push JSON -> decrypt -> title/body/record
#   sender_proofs/s  a Kasia sender proof: Kaspa's signature hash of a transaction, then Schnorr
#   sealed_pushes_opened/s  a sealed push as Herald sends it: RFC 8291 decryption, then its Ed25519 signature
#   sealed_kasia_pushes_shown/s  a sealed Kasia push with its sender proof: opened, both signatures checked, decrypted, shown
#   kasia_decode_peak_rss_kb  peak RSS of `kasia decode --payload … --private-key …`
# An extension has about 30 s and little memory; targets: >= 2,000 decrypts/s, <= 20 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
swift build -c release --product heraldkit-bench >&2
swift build -c release --product kasia >&2
bin=$(swift build -c release --show-bin-path)
address=kaspa:qqeggdky8u5ldmr0l4drc48ex74qfq0mlj87qjykhlpjhq2d9v6e7428fv7tj   # reference vector 1
key=153b34224093bc1e2b9096675bb89b2c18dad98b127d747a4944cea264a612a5
payload=$("$bin/kasia" encrypt --to "$address" --text "$(printf 'a%.0s' $(seq 200))" --alias a1b2c3d4e5f6)
for round in $(seq 1 "$ROUNDS"); do
  rss=$(python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$bin/kasia" decode --payload "$payload" --private-key "$key")
  "$bin/heraldkit-bench" --seconds 3 | python3 -c 'import json,sys; d=json.load(sys.stdin); d["kasia_decode_peak_rss_kb"]=int(sys.argv[1]); print(json.dumps(d))' "$rss"
done | tee /dev/stderr | python3 -c '
import json, statistics, sys
runs = [json.loads(line) for line in sys.stdin if line.startswith("{")]
print(json.dumps({k: statistics.median(r[k] for r in runs) for k in runs[0]}))'
