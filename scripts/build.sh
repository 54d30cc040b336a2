#!/usr/bin/env bash
# Configures and builds one preset (release, debug or asan). Usage: scripts/build.sh [PRESET]
# HEADROOM_UNITY_BUILD=ON compiles several sources per compiler run (CMake's unity build): about
# half the time of a whole build, as scripts/test.sh builds; OFF (the default) rebuilds one file
# per change, for the edit-compile loop. Switching it rebuilds the preset's folder.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
cmake --preset "$preset" -DCMAKE_UNITY_BUILD="${HEADROOM_UNITY_BUILD:-OFF}" >/dev/null
cmake --build --preset "$preset" -- -j"$(nproc)"
