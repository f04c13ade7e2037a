#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device call behind this folder, run in a folder that holds tip/ (the
# tree at the commit measured, with build-dev/peers/mimalloc3 from
# `scripts/install-deps bench`), prev/ (4de9810, the tree before the
# large-cache change), base/ (4366213 = a1769dc^, before purge.c) and
# peers/debian/ (the Debian 12 peers' .so files: the host has none).
# Each step's outputs go to $OUT as a tarball, so what ran comes back even
# if a later step runs out of time.
set -uo pipefail
export PYTHONUNBUFFERED=1
O=/tmp/o; mkdir -p "$O"
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), kernel $(uname -r)," \
     "THP $(cat /sys/kernel/mm/transparent_hugepage/enabled), $(date -u '+%F %T') UTC"
cfg=(-DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF -DCMAKE_CUDA_COMPILER=)
cmake -S tip -B tip/build-dev "${cfg[@]}" >/dev/null || exit 1
for t in prev base; do cmake -S $t -B $t/build-dev "${cfg[@]}" -DMANYMALLOC_BUILD_BENCH=OFF >/dev/null || exit 1; done
cmake --build tip/build-dev -j12 --target manymalloc mmdriver bench-vv bench-churn bench-prodcons bench-scratch \
  bench-spawn bench-xmalloc bench-large bench-stress bench-octree bench-simple bench-mixed >/dev/null &
for t in prev base; do cmake --build $t/build-dev -j2 --target manymalloc >/dev/null & done
wait
B=tip/build-dev
step() { local name=$1; shift; local t0=$SECONDS; "$@"; echo "$name: $((SECONDS - t0)) s"
         tar czf "$OUT/$name.tgz" -C "$O" "$name"; }
run=(python3 tip/bench/run.py --build $B --peer-dir peers/debian)
# 1. the bench set at 16 threads, as 2026-11-28-h200-cpu
step cpu16 "${run[@]}" --quick --scale 0.05 --reps 5 --threads 16 --pin --only '^(?!traces$)' --out $O/cpu16
# 2. the A/B: before purge.c (base), before the large-cache change (prev), this commit (tip)
mkdir -p $O/ab
step ab python3 tip/bench/results/2026-11-28-h200-cpu-large/ab.py --bench $B --threads 1,16 --scale 0.05 \
  --reps 5 --json $O/ab/ab.json base=base/build-dev/libmanymalloc.so prev=prev/build-dev/libmanymalloc.so \
  tip=$B/libmanymalloc.so
# 3. the trace set at 16 threads (5 replays each, medians)
step traces16 "${run[@]}" --threads 16 --only '^traces$' --out $O/traces16
# 4. large and bigpair with our large mappings advised for huge pages
step thp16 env MANYMALLOC_LARGE_HUGEPAGES=1 "${run[@]}" --quick --scale 0.05 --reps 5 --threads 16 --pin \
  --only '^(large|bigpair)$' --out $O/thp16
