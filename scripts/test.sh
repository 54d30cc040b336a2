#!/usr/bin/env bash
# The README's second command (and what .ci/run calls): install what is missing, build
# Release and run every test (the fuzz regression inputs and the bad-input corpus
# included). With HEADROOM_SANITIZE=1 it then builds the AddressSanitizer+UBSan preset and
# runs the whole suite again under it (GUI tests included, offscreen), and builds the
# libFuzzer harnesses (clang, `fuzz` preset) and runs each for a bounded time
# (HEADROOM_FUZZ_SECONDS, default 30; HEADROOM_SKIP_FUZZ=1 skips it); a crash fails the run.
# The sanitizer and fuzz stages are not yet part of CI: they have not had a full clean run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export QT_QPA_PLATFORM=offscreen

echo "== release build and tests"
scripts/build.sh release
ctest --preset release -j2

if [ "${HEADROOM_SANITIZE:-0}" = "1" ]; then
  echo "== asan+ubsan build and tests"
  scripts/build.sh asan
  ctest --preset asan -j2
fi

if [ "${HEADROOM_SANITIZE:-0}" = "1" ] && [ "${HEADROOM_SKIP_FUZZ:-0}" != "1" ]; then
  echo "== fuzz: libFuzzer + ASan/UBSan, ${HEADROOM_FUZZ_SECONDS:-30} s per harness"
  scripts/build.sh fuzz
  tests/fuzz/run_fuzz.sh build/fuzz "${HEADROOM_FUZZ_SECONDS:-30}"
fi
