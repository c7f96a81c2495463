"""Where the node's CPU goes under `gamechain bench`: reads a `perf record` of the bench process
(`tests/profile/run.sh` makes one) and sums the node's samples by thread and by kind of work,
leaving out the load generator's own threads (`gc-bench`) and everything before the load phase.

Usage: python3 categories.py PERF_DATA LAST_SECONDS TRANSACTIONS
  LAST_SECONDS  the window at the end of the recording to count (the bench's "committed … in S s")
  TRANSACTIONS  the transactions committed in it (µs per transaction are printed from it)

Samples are attributed by the symbol that was running (no call graphs: release builds have no
frame pointers), so "kernel" is every system call, page fault and context switch, and "other"
the rest of our own code (execution, the mempool, encoding).
"""

import collections
import re
import subprocess
import sys

# First match wins: more specific patterns first.
CATEGORIES = [
    ("signature recovery (secp256k1)", r"secp256k1"),
    ("SQLite", r"sqlite3|pcache|pager|[Bb]tree(?!Map)|Vdbe|wal[A-Z]|cellSize|accessPayload|pageFind|rusqlite"),
    ("wasm compile (Cranelift)", r"cranelift|regalloc2|wasmparser"),
    ("wasm execution (wasmtime)", r"wasmtime|wasm\["),
    ("JSON (serde_json)", r"serde_json"),
    ("allocator (mimalloc)", r"_mi_|\bmi_|malloc|free"),
    ("memcpy/memcmp", r"memmove|memcpy|memcmp|memset"),
    ("SHA-256", r"sha2::|sha256"),
    ("state tree / LtHash", r"sparse_merkle|state_root|lthash|LtHash"),
    ("HTTP + async runtime (hyper, axum, tokio)", r"hyper|axum|tokio|tower|httparse|mio::"),
    ("WebSocket push (tungstenite)", r"tungstenite"),
    ("codecs (hex, bs58, base64, lz4, borsh)", r"hex::|bs58|base64|lz4|borsh"),
]


def main():
    data, last_seconds, txs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    times = subprocess.run(
        ["perf", "script", "-i", data, "-F", "time"], capture_output=True, text=True
    ).stdout.split()
    end = float(times[-1].rstrip(":"))
    start = end - last_seconds
    out = subprocess.run(
        ["perf", "script", "-i", data, "-F", "comm,time,ip,sym,dso", "--time", f"{start:.6f},{end:.6f}"],
        capture_output=True,
        text=True,
    ).stdout
    rate = None
    header = subprocess.run(["perf", "report", "-i", data, "--header-only"], capture_output=True, text=True).stdout
    m = re.search(r"sample_freq\D*(\d+)", header)
    rate = int(m.group(1)) if m else 999
    by_thread = collections.Counter()
    by_kind = collections.defaultdict(collections.Counter)
    for line in out.splitlines():
        m = re.match(r"\s*(\S+)\s+[\d.]+:\s+(.*)$", line)
        if not m or m.group(1) == "gc-bench":
            continue
        thread, rest = m.groups()
        kind = "other"
        if "kernel.kallsyms" in rest:
            kind = "kernel"
        else:
            for name, pattern in CATEGORIES:
                if re.search(pattern, rest):
                    kind = name
                    break
        by_thread[thread] += 1
        by_kind[thread][kind] += 1
    total = sum(by_thread.values())
    us = lambda n: n / rate * 1e6 / txs
    print(f"node: {total} samples at {rate} Hz over the last {last_seconds:.1f} s: {us(total):.0f} µs of CPU per transaction")
    kinds = collections.Counter()
    for counts in by_kind.values():
        kinds.update(counts)
    print("by kind of work:")
    for kind, n in kinds.most_common():
        print(f"  {kind:44} {100 * n / total:5.1f}%  {us(n):6.1f} µs/tx")
    print("by thread (its three largest kinds):")
    for thread, n in by_thread.most_common():
        top = ", ".join(f"{k} {100 * c / n:.0f}%" for k, c in by_kind[thread].most_common(3))
        print(f"  {thread:16} {100 * n / total:5.1f}%  {us(n):6.1f} µs/tx  ({top})")


if __name__ == "__main__":
    main()
