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
  # A screen the default 1400 x 800 window fits on (xvfb-run's own is 640 x 480 or 1280 x 1024).
  exec xvfb-run -a -s "-screen 0 1400x900x24" build/release/app/headroom "$@"
fi
exec build/release/app/headroom "$@"
