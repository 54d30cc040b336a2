#!/usr/bin/env bash
# The README's second command (and what .ci/run calls): install what is missing, build
# Release and run every test, then build the AddressSanitizer+UBSan preset and run the
# whole suite again under it (GUI tests included, on Qt's offscreen platform), then builds
# the libFuzzer harnesses (clang, `fuzz` preset) and runs each for a bounded time
# (HEADROOM_FUZZ_SECONDS, default 30; HEADROOM_SKIP_FUZZ=1 skips it); a crash fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export QT_QPA_PLATFORM=offscreen

echo "== release build and tests"
scripts/build.sh release
ctest --preset release -j2

if [ "${HEADROOM_SKIP_ASAN:-0}" != "1" ]; then
  echo "== asan+ubsan build and tests"
  scripts/build.sh asan
  ctest --preset asan -j2
fi

if [ "${HEADROOM_SKIP_FUZZ:-0}" != "1" ]; then
  echo "== fuzz: libFuzzer + ASan/UBSan, ${HEADROOM_FUZZ_SECONDS:-30} s per harness"
  scripts/build.sh fuzz
  tests/fuzz/run_fuzz.sh build/fuzz "${HEADROOM_FUZZ_SECONDS:-30}"
fi
