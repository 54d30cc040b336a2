#!/usr/bin/env bash
# Runs the GUI tests N times (default 20) while two busy loops keep both cores loaded, and
# prints "N passed, N failed". A test that fails here will, sooner or later, fail in CI.
# Usage: tests/gui/run_under_load.sh [BUILD_DIR] [RUNS]
set -u
cd "$(dirname "$0")/../.."
build="${1:-build/release}"
runs="${2:-20}"
yes > /dev/null & l1=$!
yes > /dev/null & l2=$!
trap 'kill $l1 $l2 2>/dev/null' EXIT
pass=0; fail=0
for i in $(seq 1 "$runs"); do
  if QT_QPA_PLATFORM=offscreen ctest --test-dir "$build" -R '^(gui|whatif_panel|firstrun_.*)$' -j2 \
       > "$build/under_load_$i.log" 2>&1; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "run $i failed: $build/under_load_$i.log"
  fi
done
echo "GUI tests under load: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
