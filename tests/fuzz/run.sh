#!/usr/bin/env bash
# tests/fuzz/run.sh: the one command that runs every cargo-fuzz target of gamechain
# (tests/fuzz/README.md) for SECONDS each (default 60), then prints one line of figures per
# target (executions, seconds, executions per second, crash files). Installs cargo-fuzz and
# the nightly toolchain when missing. Exit 1 when any target found a crash (the inputs are in
# tests/fuzz/artifacts/<target>/).
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
#
# Environment: CARGO_TARGET_DIR (build directory; default tests/fuzz/target),
# FUZZ_SANITIZER (default none; `address` for ASan, slower), FUZZ_WORK (where new corpus entries go; default $CARGO_TARGET_DIR/corpus,
# so the committed seed corpora in tests/fuzz/corpus/ stay small), FUZZ_COVERAGE (default
# `ours`: coverage instrumentation and debug assertions only in gamechain's own crates, see
# `coverage-ours`; `all`: in every crate, as plain `cargo fuzz build`).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
secs="${1:-60}"
shift || true
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"
sanitizer="${FUZZ_SANITIZER:-none}"
work="${FUZZ_WORK:-$CARGO_TARGET_DIR/corpus}"
coverage="${FUZZ_COVERAGE:-ours}"
export FUZZ_COVERAGE="$coverage" RUSTC_WRAPPER="$here/coverage-ours"
# Cargo does not see what the wrapper removes: the mode (and the wrapper's version) goes into
# RUSTFLAGS, so switching modes rebuilds every crate instead of mixing two builds.
export RUSTFLAGS="${RUSTFLAGS:-} --cfg gamechain_fuzz_coverage=\"$coverage-2\""

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

cd "$here"
fuzz=(cargo +nightly fuzz)
"${fuzz[@]}" build --fuzz-dir "$here" -s "$sanitizer"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <("${fuzz[@]}" list --fuzz-dir "$here")

failed=0
summary=()
for t in "${targets[@]}"; do
    mkdir -p "$work/$t" "$here/artifacts/$t"
    log="$work/$t.log"
    before=$(find "$here/artifacts/$t" -type f | wc -l)
    echo "== $t: ${secs}s"
    status=0
    "${fuzz[@]}" run --fuzz-dir "$here" -s "$sanitizer" "$t" "$work/$t" "$here/corpus/$t" -- \
        -max_total_time="$secs" -print_final_stats=1 -timeout=60 -rss_limit_mb=4096 \
        2>&1 | tee "$log" | grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|==[0-9]+== ERROR|thread .* panicked|SUMMARY|Done )' || status=$?
    after=$(find "$here/artifacts/$t" -type f | wc -l)
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{s+=$2} END {print s+0}')
    took=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | awk '{s=$5} END {print s+0}')
    [ "$took" -gt 0 ] || took="$secs"
    crashes=$((after - before))
    [ "$crashes" -eq 0 ] || failed=1
    summary+=("$(printf '| %s | %s | %s | %s | %s |' "$t" "$execs" "$took" "$((execs / took))" "$crashes")")
done

echo
echo "| target | executions | seconds | exec/s | new crash files |"
echo "|---|---|---|---|---|"
printf '%s\n' "${summary[@]}"
exit "$failed"
