#!/usr/bin/env bash
# Profiles the node under `gamechain bench` with `perf` and prints where its CPU goes per
# transaction, by kind of work and by thread (`categories.py`). Two loads:
#   tests/profile/run.sh flat     100,000 signed transfers flat out (the default)
#   tests/profile/run.sh steady   10,000 transfers at 1,000 tx/s
# Needs `perf` (linux-perf) and a kernel that lets this user record (perf_event_paranoid ≤ 2).
# Builds the release binary first when it is out of date. Figures depend on the machine's load:
# compare runs of one sitting. The recording stays in target/profile/<load>.data for
# `perf report -i …`.
set -euo pipefail
cd "$(dirname "$0")/../.."
load="${1:-flat}"
case "$load" in
  flat) args=(--txs 100000) ;;
  steady) args=(--txs 10000 --rate 1000) ;;
  *) echo "usage: $0 [flat|steady]" >&2; exit 2 ;;
esac
cargo build --release -p gamechain-node
mkdir -p target/profile
data="target/profile/$load.data"
perf record -F 999 -o "$data" -- target/release/gamechain bench --workload transfer --accounts 2000 "${args[@]}" | tee "target/profile/$load.txt"
line=$(grep -m1 '^  committed ' "target/profile/$load.txt")
txs=$(echo "$line" | awk '{print $2}')
secs=$(echo "$line" | awk '{print $4}')
python3 tests/profile/categories.py "$data" "$secs" "$txs"
