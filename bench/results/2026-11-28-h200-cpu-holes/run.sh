#!/bin/bash
# cpu A/B: segments kept apart by a hole (tip) against merged (base, 7d6c659), mimalloc 3.4.3 beside, bench set at 16 threads
set -uo pipefail
cd .dev-cpu7
echo "host: $(nproc) CPUs, kernel $(uname -r), $(date -u '+%F %T') UTC"
cfg=(-DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF -DCMAKE_CUDA_COMPILER=)
cmake -S tip -B tip/build-dev "${cfg[@]}" >/tmp/c1.log 2>&1 || { tail -20 /tmp/c1.log; exit 1; }
cmake -S base -B base/build-dev "${cfg[@]}" -DMANYMALLOC_BUILD_BENCH=OFF >/tmp/c2.log 2>&1 || { tail -20 /tmp/c2.log; exit 1; }
cmake --build tip/build-dev -j12 --target manymalloc bench-vv bench-churn bench-prodcons bench-scratch \
  bench-spawn bench-xmalloc bench-large bench-stress bench-octree bench-simple bench-mixed >/tmp/b1.log 2>&1 || { tail -20 /tmp/b1.log; exit 1; } &
cmake --build base/build-dev -j4 --target manymalloc >/tmp/b2.log 2>&1 || { tail -20 /tmp/b2.log; exit 1; } &
wait
B=tip/build-dev
for who in base tip; do
  LD_PRELOAD=$who/build-dev/libmanymalloc.so $B/bench-mixed --threads 16 --ops 200000 | sed "s/^/$who /"
done
python3 tip/bench/results/2026-11-28-h200-cpu-large/ab.py --bench $B --threads 16 --scale 0.05 --reps 7 \
  --json $OUT/ab.json base=base/build-dev/libmanymalloc.so tip=$B/libmanymalloc.so mimalloc3=$PWD/m3/libmimalloc.so.3 | tee $OUT/ab.txt
for r in 1; do for who in base tip; do
  LD_PRELOAD=$who/build-dev/libmanymalloc.so $B/bench-mixed --threads 16 --ops 200000 | sed "s/^/$who /"
done; LD_PRELOAD=$PWD/m3/libmimalloc.so.3 $B/bench-mixed --threads 16 --ops 200000 | sed "s/^/mimalloc3 /"; done
date -u
