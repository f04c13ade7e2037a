#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Decision 0095 on the 2-core VM: libmanymalloc.so at 320f907 (BASE) and at
# the commit measured (TIP) under the same build/mmdriver (LD_PRELOAD), the
# peers beside them.  usage: vm-kept-page.sh BASE.so TIP.so
set -u
base=$1 tip=$2
m2=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
m3=build/peers/mimalloc3/cmeel.prefix/lib/libmimalloc.so.3
syn=(bench/traces/syn-struct.rep bench/traces/syn-string.rep)
echo "# 1. software counters over mmdriver -r 200 --no-first (the validated replay and 200 timed ones), syn-struct and syn-string"
for t in 1 2; do
  for l in base=$base tip=$tip mimalloc=$m2 mimalloc3=$m3; do
    LD_PRELOAD=${l#*=} perf stat -x, -o /tmp/kept-page.perf -e page-faults,syscalls:sys_enter_madvise,task-clock \
      build/mmdriver -t $t -r 200 --no-first -f csv "${syn[@]}" >/dev/null 2>&1
    echo "$t threads ${l%%=*}: $(grep -v '^#' /tmp/kept-page.perf | grep . | awk -F, '{printf "%s %s, ", $1, $3}')"
  done
done
echo "# 2. Kops/s: 5 interleaved rounds of mmdriver -r 5, medians"
for t in 1 2; do
  for r in 1 2 3 4 5; do
    for l in base=$base tip=$tip mimalloc=$m2 mimalloc3=$m3; do
      LD_PRELOAD=${l#*=} build/mmdriver -t $t -r 5 -f csv "${syn[@]}" bench/traces/python-objects.rep \
        bench/traces/gcc-O2.rep 2>/dev/null | awk -F, -v n=${l%%=*} -v t=$t 'NR>1 && NF>4 {print t, n, $1, $5}'
    done
  done
done | python3 -c '
import sys, statistics, collections
d = collections.defaultdict(list)
for line in sys.stdin:
    t, n, trace, k = line.split(); d[(t, trace.split("/")[-1], n)].append(float(k))
for (t, trace, n), v in sorted(d.items()):
    print(f"{t} threads {trace:22s} {n:10s} median {statistics.median(v):10.0f}  runs {sorted(round(x) for x in v)}")'
echo "# 3. utilization at one thread, mmdriver -r 0, every trace"
for l in base=$base tip=$tip glibc=/lib/x86_64-linux-gnu/libc.so.6; do
  LD_PRELOAD=${l#*=} build/mmdriver -r 0 -f csv bench/traces/*.rep 2>/dev/null |
    awk -F, -v n=${l%%=*} 'NR>1 && NF>4 {printf "%s ", $4; s += $4; k++} END {printf " mean %.4f %s\n", s / k, n}'
done
