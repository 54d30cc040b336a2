#!/usr/bin/env bash
# Regenerates the screenshots of docs/user-guide.md from the real application on a real
# file (the bundled pt27_kk_memory_ctx128_fullstep snapshot), offscreen, with fresh
# settings: nothing in docs/screenshots/ is edited by hand.
#   scripts/screenshots.sh [BUILD_DIR]       (default build/release; build it first)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
app="$build/app/headroom"
[ -x "$app" ] || { echo "screenshots.sh: $app is not built (scripts/build.sh release)" >&2; exit 2; }
out=docs/screenshots
mkdir -p "$out"
file=sample_traces/pt27_kk_memory_ctx128_fullstep.pickle.gz
# The guide's story: this step has to fit a 48 GiB card.
capacity=48GiB
config="$(mktemp -d)"
trap 'rm -rf "$config"' EXIT
export XDG_CONFIG_HOME="$config" QT_QPA_PLATFORM=offscreen

shot() { echo "  $1"; "$app" --screenshot "$out/$1" "${@:2}"; }
echo "screenshots.sh: writing $out/"
shot window.png --capacity "$capacity" "$file"
for view in timeline breakdown allocations stacks diagnosis allocator whatif; do
  shot "$view.png" --capacity "$capacity" --view "$view" "$file"
done
# The allocator replay's reserved curve under expandable segments over the recorded one.
shot timeline-simulated.png --capacity "$capacity" --view timeline --alloc-conf expandable_segments:True "$file"
shot window-dark.png --theme dark --capacity "$capacity" "$file"
# The start page after that file was opened once (it is in the recent list).
shot start.png
# High DPI: the same window and an exported view at 200% scaling must be sharp.
QT_SCALE_FACTOR=2 shot window@2x.png --capacity "$capacity" "$file"
QT_SCALE_FACTOR=2 shot timeline@2x.png --capacity "$capacity" --view timeline "$file"
echo "screenshots.sh: done"
