#!/usr/bin/env bash
# The whole GPU suite over as many device calls as it takes (it no longer fits one: run 182
# reached 79 of 108 integration tests in 400 s). Usage, on the GPU machine, from the
# repository root with .gpu carried:
#   bash scripts/gpu-suite.sh [SECONDS] [FIRST]
# runs the test groups in order from group FIRST (1, the default, is the first), with
# KERNLAB_REQUIRE_GPU=1 and KERNLAB_REQUIRE_NVRTC=1, and starts no group once SECONDS (default
# 520) have passed; a group still running then is cut at that time. A group is the unit tests
# of one executable, one module of the integration tests, or one test function of `ops::` (the
# GPU-heavy module; a filter is a substring, so it also takes a test whose name extends it),
# so that a resumed call repeats little. $S gets a line a group (seconds, passed,
# failed, its first failures) and, last, `next: N` (the group to pass as FIRST in the next
# call) or `all groups ran`. Each group's log is in files.tgz (gpu-lib.sh).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
budget=${1:-520}
first=${2:-1}
gpu_start
# Groups, one a line: EXECUTABLE FILTER... (no filter: all its tests); the same order every
# call, since the executables and their test names are the same.
groups="$OUT/groups.txt"
: > "$groups"
for t in .gpu/tests/*; do
  # The unit tests (kernlab-*: the library's and the binary's) are one group each; the
  # integration tests (tests-*) are split.
  case $(basename "$t") in
    tests-*) ;;
    *) echo "$t" >> "$groups"; continue ;;
  esac
  names=$("$t" --list --format terse 2>/dev/null | sed -n 's/: test$//p')
  for m in $(sed 's/::.*//' <<< "$names" | sort -u); do
    if [ "$m" = ops ]; then
      # One group a test function (its ::cpu and ::cuda cases together).
      for f in $(grep "^ops::" <<< "$names" | sed 's/^\(ops::[^:]*\).*/\1/' | sort -u); do
        echo "$t $f" >> "$groups"
      done
    else
      echo "$t $m::" >> "$groups"
    fi
  done
done
total=$(wc -l < "$groups")
echo "groups: $total (from $first; $budget s)" >> "$S"
n=0
next=
while read -r exe filter; do
  n=$((n + 1))
  [ "$n" -lt "$first" ] && continue
  left=$((budget - ($(date +%s) - t0)))
  if [ "$left" -le 5 ]; then next=$n; break; fi
  log="$OUT/group-$n.log"
  g0=$(date +%s)
  KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout "$left" "$exe" --test-threads=1 $filter < /dev/null > "$log" 2>&1
  rc=$?
  counts=$(awk '/^test result/ {p+=$4; f+=$6} END {print p+0" passed "f+0" failed"}' "$log")
  echo "$n $(basename "$exe") ${filter:-(all)}: exit $rc, $(( $(date +%s) - g0 )) s, $counts" >> "$S"
  grep -E "^test .*FAILED|panicked" "$log" | head -3 | cut -c1-300 >> "$S"
  if [ "$rc" -eq 124 ]; then next=$n; break; fi
done < "$groups"
if [ -n "$next" ]; then echo "next: $next" >> "$S"; else echo "all groups ran" >> "$S"; fi
el suite
cat "$S"
