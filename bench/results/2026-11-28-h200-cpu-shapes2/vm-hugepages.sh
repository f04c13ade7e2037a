#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Decision 0094 on the 2-core VM: libmanymalloc.so at 320f907 (BASE) and at
# the commit measured (TIP), under the same bench programs and mmdriver
# (LD_PRELOAD), mimalloc 3.4.3 beside them; 5 interleaved rounds, medians.
# FULL, if given, is TIP with the whole mapping advised before its header
# is written (decision 0094's option 2).
# usage: vm-hugepages.sh BASE.so TIP.so [FULL.so]
set -u
base=$1 tip=$2
m3=build/peers/mimalloc3/cmeel.prefix/lib/libmimalloc.so.3
libs=(base=$base tip=$tip mimalloc3=$m3)
[ $# -ge 3 ] && libs+=(full=$3)
echo "# 1. bench-large: large (--slots 20, 5-25 MiB) and bigpair (--slots 1, 1-32 MiB), seconds / peak RSS KiB / page faults"
for r in 1 2 3 4 5; do
  for t in 1 2; do
    for c in "large 25 --slots 20 --min 5242880 --max 26214400" "bigpair 15 --slots 1 --min 1048576 --max 33554432"; do
      set -- $c; name=$1 iters=$2; shift 2
      for l in "${libs[@]}"; do
        out=$(LD_PRELOAD=${l#*=} perf stat -x, -o /tmp/hp.perf -e page-faults build/bench-large --threads $t --iters $iters "$@" 2>&1 | tail -1)
        s=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$out"); rss=$(sed -n 's/.*peak_rss_kib=\([0-9]*\).*/\1/p' <<<"$out")
        echo "$name $t ${l%%=*} $s $rss $(grep -v '^#' /tmp/hp.perf | grep . | cut -d, -f1)"
      done
    done
  done
done | python3 -c '
import sys, statistics, collections
d = collections.defaultdict(list)
for line in sys.stdin:
    c, t, n, s, rss, f = line.split(); d[(c, int(t), n)].append((float(s), int(rss), int(f)))
for (c, t, n), v in sorted(d.items()):
    m = [statistics.median(x[i] for x in v) for i in range(3)]
    print(f"{c:8s} {t}T {n:10s} {m[0]:.4f} s {m[1]:8.0f} KiB {m[2]:8.0f} faults   seconds {sorted(x[0] for x in v)}")'
echo "# 2. sort and xz: Kops/s of the timed replays / of first replays (mmdriver -r 5), medians of 5 rounds"
for r in 1 2 3 4 5; do
  for t in 1 2; do
    for l in "${libs[@]}"; do
      LD_PRELOAD=${l#*=} build/mmdriver -t $t -r 5 -f csv bench/traces/sort.rep bench/traces/xz.rep 2>/dev/null |
        awk -F, -v n=${l%%=*} -v t=$t 'NR>1 && NF>4 {print t, n, $1, $5, $6}'
    done
  done
done | python3 -c '
import sys, statistics, collections
d = collections.defaultdict(list)
for line in sys.stdin:
    t, n, trace, k, f = line.split(); d[(int(t), trace.split("/")[-1], n)].append((float(k), float(f)))
for (t, trace, n), v in sorted(d.items()):
    print(f"{t}T {trace:9s} {n:10s} timed {statistics.median(x[0] for x in v):9.0f}  first {statistics.median(x[1] for x in v):8.0f}")'
