#!/usr/bin/env python3
"""Groups a `perf record` profile of a Herald process into stages, by where each sample's own
time went (its symbol and the library it is in), and prints a Markdown table: stage, share.

    python3 Benchmarks/perf-stages.py /tmp/matrix.perf

Given callgrind's output instead (Benchmarks/instructions.sh), it groups the instructions each
function executed itself the same way and prints instructions per event beside the share:

    python3 Benchmarks/perf-stages.py --callgrind big.out [--minus small.out] --events N

`--minus` subtracts a shorter run of the same command (its start and end), so what is left is
the instructions of N events.

The profiles behind the stage tables of Benchmarks/README.md come from the scripts' PERF=file
option (perf samples at 999 Hz with call graphs; this VM exposes no hardware counters, so shares
of sampled time stand in for instruction counts).
"""
import re
import subprocess
import sys
from collections import defaultdict

STAGES = [
    "kernel: context switches and wakeups",
    "kernel: disk (the WAL's writes and fsync)",
    "kernel: sockets and the rest",
    "Swift reference counting",
    "Swift runtime and standard library (metadata, hashing, exclusivity, arrays, strings)",
    "malloc, free, memcpy",
    "locks (pthread mutexes)",
    "Swift concurrency, dispatch, NIO event loops",
    "SQLite and GRDB",
    "HTTP/1.1 server (Hummingbird, llhttp, HTTPTypes)",
    "HTTP/2 and HPACK (NIOHTTP2; h2load: nghttp2)",
    "TLS (NIOSSL, BoringSSL record layer; h2load: OpenSSL)",
    "signing and sealing crypto (Ed25519, SHA-2, P-256)",
    "Foundation (UUID, Date, Data)",
    "logging and metrics",
    "Herald's own code",
    "other",
]

WAKEUP = re.compile(
    r"finish_task_switch|_raw_spin_unlock|schedule|wake_up|futex|enqueue_task|dequeue_task|pick_next|update_curr|"
    r"select_task_rq|ttwu|psi_|switch_mm|__switch_to|native_sched|cpuacct|update_load|update_rq|set_next_entity|"
    r"ep_poll|do_epoll|eventfd|irqentry_exit|exit_to_user_mode|hrtimer|tick_")
DISK = re.compile(
    r"ext4|jbd2|blk|bio|iowrite|ioread|virtqueue|vring|folio|filemap|mark_buffer|buffer_head|__block_|block_write|"
    r"generic_perform_write|fsync|writeback|pagecache|page_cache|submit_|nvme|scsi|xa_|find_get|__filemap|iomap|mpage")
CRYPTO = re.compile(r"^(CCryptoBoringSSL_|fe_|ge_|x25519|inline_x25519|sc_|ED25519|p256|ecp_|bn_|BN_|sha\d|SHA\d|table_select|cmov|fiat_)")
TLS = re.compile(r"^(CNIOBoringSSL_|aes_|gcm_|aead_aes|GFp_|ChaCha|chacha|poly1305|bssl::CNIOBoringSSL)")
MALLOC = re.compile(r"malloc|free|_int_|memmove|memcpy|memset|memcmp|unlink_chunk|tcache|realloc|calloc|strlen")
LOCKS = re.compile(r"pthread_mutex|__GI___pthread|pthread_cond|__lll_|lll_lock")
RETAIN = re.compile(r"swift_(retain|release|bridgeObject|unknownObject|nonatomic|weak)|RefCounts|swift_isUniquelyReferenced|swift_tryRetain")
MODULE = re.compile(r"^\$s(\d+)([A-Za-z_][A-Za-z0-9_]*)")
HTTP2_TYPES = re.compile(r"8NIOHPACK|8NIOHTTP2")

HERALD_PREFIXES = ("Herald", "Kasia", "Kaspa", "PushSigning")
MODULE_STAGES = {
    "NIOHTTP2": 10, "NIOHPACK": 10,
    "NIOSSL": 11,
    "Crypto": 12, "_CryptoExtras": 12, "CryptoBoringWrapper": 12,
    "Hummingbird": 9, "HummingbirdCore": 9, "HummingbirdHTTP2": 9, "NIOHTTP1": 9, "HTTPTypes": 9, "NIOHTTPTypes": 9,
    "NIOHTTPTypesHTTP1": 9, "NIOExtras": 9,
    "GRDB": 8, "PostgresNIO": 8,
    "NIOCore": 7, "NIOPosix": 7, "NIOConcurrencyHelpers": 7, "NIOEmbedded": 7, "ServiceLifecycle": 7, "AsyncAlgorithms": 7,
    "_NIODataStructures": 7, "DequeModule": 7, "Synchronization": 7, "NIOTLS": 11,
    "FoundationEssentials": 13, "Foundation": 13, "FoundationInternationalization": 13,
    "Logging": 14, "Metrics": 14, "CoreMetrics": 14, "Prometheus": 14,
}


def stage(dso: str, sym: str) -> int:
    if dso.startswith("[kernel"):
        if WAKEUP.search(sym):
            return 0
        if DISK.search(sym):
            return 1
        return 2
    if RETAIN.search(sym):
        return 3
    if "libsqlite3" in dso:
        return 8
    # h2load's libraries (Benchmarks/instructions.sh counts it beside herald send).
    if "libnghttp2" in dso:
        return 10
    if dso.startswith(("libssl", "libcrypto")):
        return 11
    if dso.startswith("libev"):
        return 7
    if "libswift_Concurrency" in dso or "libdispatch" in dso:
        return 7
    if dso.startswith("libc") or dso.startswith("ld-linux"):
        if MALLOC.search(sym):
            return 5
        if LOCKS.search(sym):
            return 6
        return 4 if "tls_get_addr" in sym else 16
    if "libswiftCore" in dso or "libswift_" in dso:
        return 4
    if sym.startswith("c_nio_llhttp"):
        return 9
    if TLS.search(sym):
        return 11
    if CRYPTO.search(sym):
        return 12
    m = MODULE.match(sym)
    if m:
        name = m.group(2)[: int(m.group(1))]
        # NIOCore's and the standard library's generics made for NIOHTTP2's types, and NIOHPACK's
        # extensions of ByteBuffer, are HTTP/2's work.
        if name == "NIOCore" and HTTP2_TYPES.search(sym):
            return 10
        if name.startswith(HERALD_PREFIXES):
            return 15
        if name in MODULE_STAGES:
            return MODULE_STAGES[name]
        return 16
    if sym.startswith(("$ss", "$sS")) and HTTP2_TYPES.search(sym):
        return 10
    if sym.startswith(("$ss", "$sS", "__swift", "swift_", "$sy", "$sx")):
        return 4
    if "libFoundation" in dso:
        return 13
    return 16


def callgrind_functions(path: str) -> dict:
    """Instructions each function executed itself, by (library, symbol), from callgrind's output."""
    out = subprocess.run(["callgrind_annotate", "--threshold=100", path], check=True, capture_output=True, text=True).stdout
    counts = defaultdict(int)
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([\s\d.]+%\)\s+(?:[^:\s]*:)?(.*?) \[(.*)\]$", line)
        if m:
            dso = m.group(3).rsplit("/", 1)[-1]
            counts[(dso, m.group(2))] += int(m.group(1).replace(",", ""))
    return counts


def callgrind_allocations(path: str) -> int:
    """Calls to malloc and calloc (Swift's objects, arrays and strings, and C's own), from the
    call counts in callgrind's output, whose function names are numbered after first use."""
    names, callee, total = {}, None, 0
    for line in open(path, errors="replace"):
        m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            if m.group(3) is not None:
                names[m.group(2)] = m.group(3)
            if m.group(1) == "cfn":
                callee = names.get(m.group(2))
            continue
        if line.startswith("calls=") and callee in ("malloc", "calloc"):
            total += int(line[6:].split()[0])
    return total


def callgrind_main(args: list) -> None:
    path, minus, events = args[args.index("--callgrind") + 1], None, 1
    if "--minus" in args:
        minus = args[args.index("--minus") + 1]
    if "--events" in args:
        events = int(args[args.index("--events") + 1])
    counts = callgrind_functions(path)
    if minus:
        for key, n in callgrind_functions(minus).items():
            counts[key] -= n
    stages = defaultdict(int)
    for (dso, sym), n in counts.items():
        stages[stage(dso, re.sub(r"\(.*", "", sym) if not sym.startswith("$") else sym)] += n
    total = sum(stages.values())
    print(f"instructions per event: {total / events:,.0f}")
    allocations = callgrind_allocations(path) - (callgrind_allocations(minus) if minus else 0)
    print(f"heap allocations per event (malloc, calloc): {allocations / events:,.1f}")
    print("| stage | instructions per event | share |")
    print("|---|---:|---:|")
    for i in sorted(stages, key=lambda i: -stages[i]):
        if stages[i] >= 0.005 * total:
            print(f"| {STAGES[i]} | {stages[i] / events:,.0f} | {stages[i] / total:.0%} |")


def main() -> None:
    if "--callgrind" in sys.argv:
        return callgrind_main(sys.argv[1:])
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = subprocess.run(
        ["perf", "report", "-i", sys.argv[1], "--no-children", "--sort", "dso,sym", "-g", "none", "-q",
         "--percent-limit", "0", "--field-separator", "\t"],
        check=True, capture_output=True, text=True).stdout
    shares = defaultdict(float)
    total = 0.0
    for line in out.splitlines():
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) < 3 or not parts[0].endswith("%"):
            continue
        share = float(parts[0].rstrip("%"))
        sym = re.sub(r"^\[[.k]\]\s*", "", parts[2])
        shares[stage(parts[1], sym)] += share
        total += share
    print("| stage | share |")
    print("|---|---:|")
    for i in sorted(shares, key=lambda i: -shares[i]):
        if shares[i] >= 0.5:
            print(f"| {STAGES[i]} | {shares[i] / total:.0%} |")


if __name__ == "__main__":
    main()
