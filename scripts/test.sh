#!/usr/bin/env bash
# The README's second command (and what .ci/run calls): install what is missing, build
# Release and run every test (the fuzz regression inputs and the bad-input corpus
# included); then build the AddressSanitizer+UBSan preset and run the whole suite again
# under it (GUI tests included, offscreen); then build the libFuzzer harnesses (clang,
# `fuzz` preset) and run each for a fixed number of inputs (HEADROOM_FUZZ_RUNS, default
# 20,000, seed 1; HEADROOM_FUZZ_SECONDS bounds the time, default 300). A
# crash, leak or undefined behaviour fails the run. HEADROOM_SANITIZE=0 runs the Release
# stage only (about 6 minutes instead of about 30 on 2 cores); HEADROOM_SKIP_FUZZ=1 skips
# the fuzz stage.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --test
export QT_QPA_PLATFORM=offscreen

# Each stage prints the seconds spent before it, so a slow CI log says where its time went.
stage() { echo "== $1 (${SECONDS}s so far)"; }
# Whole builds, so several sources per compiler run (scripts/build.sh): CI's builds take about
# half the time. The fuzz preset keeps one file per run (clang, a small build).
stage "release build and tests"
HEADROOM_UNITY_BUILD=ON scripts/build.sh release
ctest --preset release -j2

if [ "${HEADROOM_SANITIZE:-1}" = "1" ]; then
  stage "asan+ubsan build and tests"
  HEADROOM_UNITY_BUILD=ON scripts/build.sh asan
  ctest --preset asan -j2
fi

if [ "${HEADROOM_SANITIZE:-1}" = "1" ] && [ "${HEADROOM_SKIP_FUZZ:-0}" != "1" ]; then
  # Deterministic by default (fixed seed and number of runs, the committed seeds as the
  # starting corpus), so the same code gives the same verdict here and in CI; for longer,
  # exploratory runs: FUZZ_FLAGS="-fork=1 -ignore_crashes=1" tests/fuzz/run_fuzz.sh build/fuzz 1800
  runs="${HEADROOM_FUZZ_RUNS:-20000}"
  stage "fuzz: libFuzzer + ASan/UBSan, ${runs} runs per harness (seed 1)"
  scripts/build.sh fuzz
  rm -rf build/fuzz/tests/fuzz/corpus
  FUZZ_FLAGS="${FUZZ_FLAGS:--seed=1 -runs=${runs}}" tests/fuzz/run_fuzz.sh build/fuzz "${HEADROOM_FUZZ_SECONDS:-300}"
fi
stage "done"
