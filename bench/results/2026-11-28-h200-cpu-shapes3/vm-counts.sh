#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The 2-core VM's counts behind decisions 0096-0098 (counts, not times: the
# VM is shared and its times move by 2x; page faults, madvise calls and peak
# RSS do not).  Run in a folder holding base/, owed/, tip/ (git archive of
# 9ad0cc4, 460bb5f and the tip), each built with `cmake --preset default`,
# and thp-segments/, thp-spans/ (the tip with vm-thp-segments.patch or
# vm-thp-spans.patch applied by hand); traces from tip/bench/traces.
set -u
T=tip/bench/traces
count() { perf stat -x, -e page-faults,task-clock,syscalls:sys_enter_madvise "$@" 2>&1 >/dev/null |
          awk -F, '{printf "%s=%s ", $3, $1} END {print ""}'; }
for b in base owed tip thp-segments thp-spans; do
  for t in 1 2; do
    echo "$b mixed -t $t: $(LD_PRELOAD=$b/build/libmanymalloc.so tip/build/bench-mixed --threads $t --ops 200000 | grep -o 'peak_rss_kib=[0-9]*') $(LD_PRELOAD=$b/build/libmanymalloc.so count tip/build/bench-mixed --threads $t --ops 200000)"
  done
done
for b in base owed tip; do
  echo "$b syn-array -t 16 -r 5: $(count $b/build/mmdriver -t 16 -r 5 --no-first $T/syn-array.rep)"
  echo "$b syn-mix-realloc -t 1 -r 10, delay 100 s: $(MANYMALLOC_PURGE_DELAY=100000 count $b/build/mmdriver -t 1 -r 10 --no-first $T/syn-mix-realloc.rep)"
done
for b in tip thp-segments thp-spans; do
  echo "$b utilization at 1 thread: $($b/build/mmdriver -r 0 -f csv $T/*.rep 2>/dev/null | awk -F, 'NR>1{s+=$4; n++; printf "%s %.1f%%; ", substr($1, index($1, "traces/") + 7), 100*$4} END{printf "mean %.2f%%\n", 100*s/n}')"
done
