#!/usr/bin/env bash
# Regenerate the synthetic fixtures (tests/fixtures/) and every golden summary
# (tests/golden/<basename>.summary.json) from the real traces and the fixtures.
# Stdlib-only Python 3; deterministic. Usage: tests/tools/regen_goldens.sh [REAL_TRACES_DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tests="$(dirname "$here")"
real="${1:-${HEADROOM_REAL_TRACES:-$tests/../../shared/real_traces}}"
py="${PYTHON:-python3}"

"$py" "$here/make_fixtures.py" --out-dir "$tests/fixtures"

mkdir -p "$tests/golden"
inputs=()
for f in "$tests"/fixtures/*; do
  [ -f "$f" ] || continue # fixtures/json: the JSON inputs' goldens are make_json_fixtures.py's
  case "$(basename "$f")" in
    README.md|malicious_*|not_a_pickle.bin|empty.pickle) continue ;;
  esac
  inputs+=("$f")
done
if [ -d "$real" ]; then
  for f in "$real"/*.pickle; do [ -e "$f" ] && inputs+=("$f"); done
else
  echo "warning: real traces dir '$real' not found; only fixture goldens regenerated" >&2
fi
"$py" "$here/snapshot_summary.py" --out-dir "$tests/golden" "${inputs[@]}"

# invalid inputs must be rejected (exit 1, no golden written)
for f in "$tests"/fixtures/malicious_*.pickle "$tests/fixtures/not_a_pickle.bin" "$tests/fixtures/empty.pickle"; do
  if "$py" "$here/snapshot_summary.py" "$f" >/dev/null 2>&1; then
    echo "error: $f was accepted" >&2; exit 1
  fi
done
if [ -e /tmp/headroom_pwned ]; then echo "error: /tmp/headroom_pwned exists" >&2; exit 1; fi
echo "goldens OK"
