#!/usr/bin/env bash
# Installs the Debian 12 packages Headroom needs to build, test and run.
# Idempotent: installs only what is missing, and runs apt-get update only then.
# --test adds what only the tests need: Debian's PyTorch for the CPU (python3-torch), which
# records the real training steps the what-if is checked against (tools/cpu_matrix.py), and
# Node.js with npm, which install the official MCP SDK client pinned in
# tests/mcp/package-lock.json (npm ci from the npm registry) that tests `headroom-cli mcp`.
# Building and running Headroom never need them.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libqt6svg6 libgl-dev
  libqcustomplot-dev
  nlohmann-json3-dev libzstd-dev zlib1g-dev
  libsqlite3-dev libpq-dev
  catch2 libcli11-dev
  clang libclang-rt-14-dev
  python3
  xvfb xauth fonts-dejavu-core
  desktop-file-utils dpkg-dev file
)
TEST=0
if [ "${1:-}" = "--test" ]; then
  TEST=1
  # postgresql: the budget store's tests start a server of their own in a temporary folder.
  PACKAGES+=(python3-torch postgresql)
  # A Node.js from elsewhere (nodesource ships npm inside its nodejs) serves as well.
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    PACKAGES+=(nodejs npm)
  fi
fi

# The MCP test's client: installed when the lock file is newer than what is installed.
install_mcp_client() {
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tests/mcp"
  if [ "$TEST" = "1" ] && { [ ! -f "$dir/node_modules/.package-lock.json" ] ||
                            [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; }; then
    echo "install-deps: npm ci in tests/mcp (the MCP SDK client, pinned)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  install_mcp_client
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_mcp_client
