#!/usr/bin/env bash
# Draws the library's CMake target graph (docs/targets.png): cmake --graphviz over a configure
# without tests, benchmarks or fuzzers, system libraries left out. An arrow goes from a target to
# one it links; every arrow points down.
#
#   bash docs/targets.sh            # needs graphviz (apt-get install graphviz)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/CMakeGraphVizOptions.cmake" <<'CMAKE'
set(GRAPHVIZ_GRAPH_NAME "crawler")
set(GRAPHVIZ_EXTERNAL_LIBS FALSE)
set(GRAPHVIZ_GENERATE_PER_TARGET FALSE)
set(GRAPHVIZ_GENERATE_DEPENDERS FALSE)
CMAKE
cmake -S "$here/.." -B "$work" -G Ninja -DCRAWLER_BUILD_TESTS=OFF -DCRAWLER_BUILD_BENCH=OFF \
  --graphviz="$work/targets.dot" > /dev/null
dot -Tpng -Gdpi=110 "$work/targets.dot" -o "$here/targets.png"
echo "wrote $here/targets.png"
