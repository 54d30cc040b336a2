#!/usr/bin/env bash
# The README's second command (and what .ci/run calls): install what is missing, build
# Release and run every test, then build the AddressSanitizer+UBSan preset and run the
# whole suite again under it (GUI tests included, on Qt's offscreen platform).
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
