#!/usr/bin/env bash
# The README's first command: install what is missing, build Release, open Headroom on a
# bundled sample trace (or on the files given as arguments).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
if [ $# -eq 0 ]; then
  set -- sample_traces/pt27_kk_memory_ctx128_fullstep.pickle.gz
fi
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
  echo "run: no display found; starting Headroom under xvfb-run (set QT_QPA_PLATFORM to override)" >&2
  exec xvfb-run -a build/release/app/headroom "$@"
fi
exec build/release/app/headroom "$@"
