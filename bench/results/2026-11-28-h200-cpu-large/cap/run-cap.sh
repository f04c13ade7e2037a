#!/usr/bin/env bash
# The trace set under three caps on the large mappings the cache may hold by
# the peak rule (MM_LARGE_BULK_MAX 64, 128, 512 MiB), at 1, 8 and 16
# threads, 3 rounds interleaved (order rotated), mmdriver -r 5 (medians).
set -uo pipefail
cd "$(dirname "$0")"
T=../tip/bench/traces
vs=(cap64 cap128 cap512)
for round in 0 1 2; do
  for t in 1 8 16; do
    for i in 0 1 2; do
      v=${vs[$(( (i + round) % 3 ))]}
      LD_LIBRARY_PATH=$PWD/$v LD_PRELOAD=$PWD/$v/libmanymalloc.so.0 ./mmdriver -t $t -r 5 -f csv $T/*.rep 2>/dev/null | grep "\.rep," | sed "s|^|$v,$t,$round,|" >> $OUT/cap.csv
    done
  done
  echo "round $round done at $SECONDS s"
done
python3 - "$OUT/cap.csv" <<'PY'
import csv, statistics, sys, collections
d = collections.defaultdict(list)
for v, t, r, trace, ops, valid, util, kops, first in csv.reader(open(sys.argv[1])):
    d[(trace.split('/')[-1], int(t), v)].append(float(kops))
for t in (1, 8, 16):
    print(f"--- {t} threads: median Kops/s over rounds")
    for trace in sorted({k[0] for k in d}):
        print(f"{trace:22}" + "".join(f"{statistics.median(d[(trace, t, v)]):12.0f}" for v in ("cap64", "cap128", "cap512")))
PY
