#!/usr/bin/env bash
# Installs the Debian 12 packages Headroom needs to build, test and run.
# Idempotent: installs only what is missing, and runs apt-get update only then.
# --test adds what only the tests need: Debian's PyTorch for the CPU (python3-torch), which
# records the real training steps the what-if is checked against (tools/cpu_matrix.py).
# Building and running Headroom never need it.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libqt6svg6 libgl-dev
  libqcustomplot-dev
  nlohmann-json3-dev libzstd-dev zlib1g-dev
  catch2 libcli11-dev
  clang libclang-rt-14-dev
  python3
  xvfb xauth fonts-dejavu-core
  desktop-file-utils dpkg-dev file
)
if [ "${1:-}" = "--test" ]; then
  PACKAGES+=(python3-torch)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
