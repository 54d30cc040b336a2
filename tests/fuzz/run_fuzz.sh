#!/usr/bin/env bash
# Runs each libFuzzer harness for a bounded time (ASan+UBSan are compiled in) and fails on
# the first crash, leak, timeout or out-of-memory. Usage:
#   tests/fuzz/run_fuzz.sh BUILD_DIR SECONDS [HARNESS...]     (default: all four)
# BUILD_DIR is the `fuzz` preset's build folder (build/fuzz). The corpus grows in
# BUILD_DIR/tests/fuzz/corpus/<harness> (kept between runs); a crashing input is written to
# BUILD_DIR/tests/fuzz/artifacts/<harness>/ — copy it to tests/fuzz/regressions/<harness>/
# once fixed, and the ordinary ctest replays it. Extra libFuzzer flags: FUZZ_FLAGS="...".
set -euo pipefail
build="${1:?usage: run_fuzz.sh BUILD_DIR SECONDS [HARNESS...]}"
seconds="${2:?usage: run_fuzz.sh BUILD_DIR SECONDS [HARNESS...]}"
shift 2
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(pickle_reader snapshot json native)
dir="$build/tests/fuzz"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
for h in "${harnesses[@]}"; do
  bin="$dir/fuzz_$h"
  [ -x "$bin" ] || { echo "run_fuzz.sh: $bin is not built (cmake --build --preset fuzz)" >&2; exit 2; }
  mkdir -p "$dir/corpus/$h" "$dir/artifacts/$h"
  log="$dir/artifacts/$h/last-run.log"
  echo "== fuzz_$h for ${seconds}s"
  # -timeout: one input may take at most 10 s (a hang is a failure); -rss_limit_mb and
  # -malloc_limit_mb: memory bounded (harnesses cap inflation at 64 MiB);
  # -max_len: 64 KiB by default (larger seeds are fuzzed as prefixes; far more executions).
  if ! "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
       -max_len=${FUZZ_MAX_LEN:-65536} -print_final_stats=1 -artifact_prefix="$dir/artifacts/$h/" \
       ${FUZZ_FLAGS:-} "$dir/corpus/$h" "$dir/seeds/$h" >"$log" 2>&1; then
    echo "fuzz_$h FAILED; the input is in $dir/artifacts/$h/, the log in $log:" >&2
    grep -E "ERROR|SUMMARY|Test unit written|runtime error" "$log" | head -20 >&2 || true
    tail -40 "$log" >&2
    status=1
    continue
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$log" | tr '\n' ' '
  echo; { grep -E "^#[0-9]+[[:space:]]+DONE" "$log" || true; } | tail -1
done
exit $status
