#!/usr/bin/env bash
# The mutation check: plants each bug of mutants.tsv in turn in a scratch copy of the work tree,
# rebuilds incrementally, runs the suites named for it and, when they pass, the whole suite; then
# prints a table of caught / not caught and the share caught. A developer's tool, not part of CI
# (it takes about 15 s a mutant on two cores; a mutant that hangs a test, up to 4 minutes).
#
#   bash mutation/run.sh                      # every mutant
#   bash mutation/run.sh dedup. parse.odd     # those whose names start with one of these
#
# A mutant whose sed expression no longer changes its file is reported "stale" (the code moved:
# update the expression); one that does not compile is "stillborn". Neither counts.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/.." && pwd)
scratch=${MUTATION_DIR:-/tmp/crawler-mutation}
jobs=${JOBS:-$(nproc)}

mkdir -p "$scratch"
# The work tree as it is (committed or not), without build directories.
# Files that differ are copied with a new mtime, so the next build sees them (a restored file
# with its old mtime would not be rebuilt after a mutant left the run); the others are left
# alone, and a second run rebuilds only what changed.
rm -rf "$scratch/incoming" && mkdir -p "$scratch/incoming" "$scratch/src"
(cd "$source_dir" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) |
  tar -xf - -C "$scratch/incoming"
(cd "$scratch/incoming" && find . -type f -print0) | while IFS= read -r -d '' file; do
  if ! cmp -s "$scratch/incoming/$file" "$scratch/src/$file"; then
    mkdir -p "$(dirname "$scratch/src/$file")" && cp "$scratch/incoming/$file" "$scratch/src/$file"
  fi
done
cmake -S "$scratch/src" -B "$scratch/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCRAWLER_BUILD_BENCH=OFF > "$scratch/configure.log" || { cat "$scratch/configure.log"; exit 1; }
echo "building the unmutated tree in $scratch/build ..."
cmake --build "$scratch/build" -j "$jobs" > "$scratch/build.log" 2>&1 || {
  tail -30 "$scratch/build.log"; echo "the unmutated tree does not build" >&2; exit 1; }

selected() {
  [ $# -le 1 ] && return 0
  local prefix
  for prefix in "${@:2}"; do [[ $1 == "$prefix"* ]] && return 0; done
  return 1
}

# Read from a copy: editing mutants.tsv during a run must not shift the lines under the loop.
cp "$here/mutants.tsv" "$scratch/mutants.tsv"
caught=0; missed=0; others=0
results=()
while IFS=$'\t' read -r name file expression suites; do
  [[ -z $name || $name == \#* ]] && continue
  selected "$name" "$@" || continue
  target="$scratch/src/$file"
  cp "$target" "$scratch/original"
  sed -i -e "$expression" "$target"
  if cmp -s "$target" "$scratch/original"; then
    verdict="stale"
  elif ! cmake --build "$scratch/build" -j "$jobs" > "$scratch/build.log" 2>&1; then
    verdict="stillborn"
  else
    (cd "$scratch/build" && timeout -k 10 240 ctest -j "$jobs" --stop-on-failure -R "$suites" \
       > "$scratch/$name.log" 2>&1)
    status=$?
    if [ $status -ne 0 ]; then
      verdict="caught"
    else
      (cd "$scratch/build" && timeout -k 10 900 ctest -j "$jobs" --stop-on-failure \
         >> "$scratch/$name.log" 2>&1)
      status=$?
      if [ $status -ne 0 ]; then verdict="caught (outside its suites)"; else verdict="NOT CAUGHT"; fi
    fi
  fi
  case $verdict in
    caught*) caught=$((caught + 1))
             by=$(grep -m1 -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted)\)' \
                  "$scratch/$name.log" | sed -E 's/^\s+[0-9]+ - ([^ ]+).*/\1/')
             [ $status -eq 124 ] && by="(a test hung: the suites ran past their time limit)" ;;
    "NOT CAUGHT") missed=$((missed + 1)); by="" ;;
    *) others=$((others + 1)); by="" ;;
  esac
  printf '%-45s %-28s %s\n' "$name" "$verdict" "$by"
  results+=("| \`$name\` | $verdict | ${by:+\`$by\`} |")
  cp "$scratch/original" "$target"
done < "$scratch/mutants.tsv"
# Leave the scratch build matching the work tree again.
cmake --build "$scratch/build" -j "$jobs" > /dev/null 2>&1

counted=$((caught + missed))
echo
echo "| mutant | verdict | first failing test |"
echo "|---|---|---|"
printf '%s\n' "${results[@]}"
echo
if [ "$counted" -gt 0 ]; then
  echo "caught $caught of $counted ($((100 * caught / counted))%); stale or stillborn: $others"
fi
