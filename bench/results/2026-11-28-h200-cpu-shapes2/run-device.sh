#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device call behind this folder, run in a folder that holds tip/ (the
# tree at the commit measured, with build-dev/peers/mimalloc3 from
# `scripts/install-deps bench`), base/ (`git archive 320f907`, the tree
# before decisions 0094 and 0095), full/libmanymalloc.so (decision 0094's
# option 2, whole mappings advised before their header is written, with
# 0095; built on the 2-core VM with `cmake --preset default`) and
# peers/debian/ (the Debian 12 peers' .so files: the host has none).  Each step's outputs go to $OUT as a
# tarball, so what ran comes back even if a later step runs out of time.
set -uo pipefail
export PYTHONUNBUFFERED=1
O=/tmp/o; mkdir -p "$O"
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), kernel $(uname -r)," \
     "THP $(cat /sys/kernel/mm/transparent_hugepage/enabled), $(date -u '+%F %T') UTC"
cfg=(-DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF -DCMAKE_CUDA_COMPILER=)
cmake -S tip -B tip/build-dev "${cfg[@]}" >/dev/null || exit 1
cmake -S base -B base/build-dev "${cfg[@]}" -DMANYMALLOC_BUILD_BENCH=OFF >/dev/null || exit 1
cmake --build tip/build-dev -j12 --target manymalloc mmdriver bench-vv bench-churn bench-prodcons bench-scratch \
  bench-spawn bench-xmalloc bench-large bench-stress bench-octree bench-simple bench-mixed >/dev/null &
cmake --build base/build-dev -j4 --target manymalloc mmdriver >/dev/null &
wait
B=tip/build-dev
step() { local name=$1; shift; local t0=$SECONDS; "$@"; echo "$name: $((SECONDS - t0)) s"
         tar czf "$OUT/$name.tgz" -C "$O" "$name"; }
run=(python3 tip/bench/run.py --build $B --peer-dir peers/debian)
# 1. the bench set at 16 threads, six allocators, as 2026-11-28-h200-cpu-large
step cpu16 "${run[@]}" --quick --scale 0.05 --reps 5 --threads 16 --pin --only '^(?!traces$)' --out $O/cpu16
# 2. this commit against 320f907 and 0094's option 2 on the bench set, interleaved, at 1 and 16 threads
ab() {
  mkdir -p $O/ab
  python3 tip/bench/results/2026-11-28-h200-cpu-large/ab.py --bench $B --threads 1,16 --scale 0.05 --reps 5 \
    --json $O/ab/ab.json base=base/build-dev/libmanymalloc.so full=full/libmanymalloc.so tip=$B/libmanymalloc.so |
    tee $O/ab/ab.txt
}
step ab ab
# 3. the trace set at 16 threads, six allocators (5 replays each, medians)
step traces16 "${run[@]}" --threads 16 --only '^traces$' --out $O/traces16
# 4. the trace set at 16 threads, this commit against 320f907, 3 interleaved rounds of 5 replays
traces_ab() {
  mkdir -p $O/traces-ab
  for r in 1 2 3; do
    for b in base tip; do
      $b/build-dev/mmdriver -t 16 -r 5 -f csv tip/bench/traces/*.rep 2>/dev/null | sed "s|^|$b,$r,|"
    done
  done > $O/traces-ab/runs.csv
}
step traces-ab traces_ab
