#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device call behind this folder, run in a folder that holds tip/ (the
# tree at the commit measured, with build-dev/peers/mimalloc3 from
# `scripts/install-deps bench` and bench/traces a link to the checkout's),
# owed/ (`git archive 460bb5f`: decision 0096 alone), base/ (`git archive
# 9ad0cc4`, the tree before 0096 and 0097) and peers/debian/ (the Debian 12
# peers' .so files: the host has none).  Each step's outputs go to $OUT as a
# tarball, so what ran comes back even if a later step runs out of time.
set -uo pipefail
export PYTHONUNBUFFERED=1
O=/tmp/o; mkdir -p "$O"
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), kernel $(uname -r)," \
     "THP $(cat /sys/kernel/mm/transparent_hugepage/enabled), $(date -u '+%F %T') UTC"
cfg=(-DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF -DCMAKE_CUDA_COMPILER=)
cmake -S tip -B tip/build-dev "${cfg[@]}" >/dev/null || exit 1
cmake -S base -B base/build-dev "${cfg[@]}" -DMANYMALLOC_BUILD_BENCH=OFF >/dev/null || exit 1
cmake -S owed -B owed/build-dev "${cfg[@]}" -DMANYMALLOC_BUILD_BENCH=OFF >/dev/null || exit 1
cmake --build tip/build-dev -j10 --target manymalloc mmdriver bench-vv bench-churn bench-prodcons bench-scratch \
  bench-spawn bench-xmalloc bench-large bench-stress bench-octree bench-simple bench-mixed >/dev/null &
cmake --build base/build-dev -j3 --target manymalloc mmdriver >/dev/null &
cmake --build owed/build-dev -j3 --target manymalloc mmdriver >/dev/null &
wait
B=tip/build-dev
step() { local name=$1; shift; local t0=$SECONDS; "$@"; echo "$name: $((SECONDS - t0)) s"
         tar czf "$OUT/$name.tgz" -C "$O" "$name"; }
run=(python3 tip/bench/run.py --build $B --peer-dir peers/debian)
# 1. counts at 16 threads, each build once: mixed (bench-mixed, --scale 0.05's 200k steps) and syn-array's timed replays
counts() {
  mkdir -p $O/counts
  for b in base owed tip; do
    for what in mixed syn-array; do
      if [ $what = mixed ]; then cmd=($B/bench-mixed --threads 16 --ops 200000); else
        cmd=($b/build-dev/mmdriver -t 16 -r 5 --no-first -f csv tip/bench/traces/syn-array.rep); fi
      echo "== $b $what"
      LD_PRELOAD=$b/build-dev/libmanymalloc.so perf stat -x, -e page-faults,task-clock,syscalls:sys_enter_madvise \
        "${cmd[@]}" 2>&1 | grep -v '^trace'
    done
  done > $O/counts/counts.txt 2>&1
  # where mixed's time goes at 16 threads: the tip, and mimalloc 3.4.3 with and without huge pages
  m3=$B/peers/mimalloc3/cmeel.prefix/lib/libmimalloc.so.3
  for who in "tip $B/libmanymalloc.so" "mimalloc3 $m3" "mimalloc3-nothp $m3"; do
    set -- $who
    echo "== $1 mixed, 16 threads"
    env LD_PRELOAD=$2 MIMALLOC_ALLOW_THP=$([ $1 = mimalloc3-nothp ] && echo 0 || echo 1) \
      perf record -q -F 1999 -g -o /tmp/p.data -- $B/bench-mixed --threads 16 --ops 200000
    perf report -i /tmp/p.data --stdio --no-children --sort dso,sym -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -25
  done > $O/counts/profile-mixed.txt 2>&1
}
step counts counts
# 2. the bench set at 16 threads, six allocators
step cpu16 "${run[@]}" --quick --scale 0.05 --reps 5 --threads 16 --pin --only '^(?!traces$)' --out $O/cpu16
# 3. base, 0096 alone and the tip on the bench set, interleaved, at 16 threads
ab() {
  mkdir -p $O/ab
  python3 tip/bench/results/2026-11-28-h200-cpu-large/ab.py --bench $B --threads 16 --scale 0.05 --reps 5 \
    --json $O/ab/ab.json base=base/build-dev/libmanymalloc.so owed=owed/build-dev/libmanymalloc.so \
    tip=$B/libmanymalloc.so | tee $O/ab/ab.txt
}
step ab ab
# 4. the trace set at 16 threads, six allocators (5 replays each, medians)
step traces16 "${run[@]}" --threads 16 --only '^traces$' --out $O/traces16
# 5. the trace set at 16 threads, the three builds, 3 interleaved rounds of 5 replays
traces_ab() {
  mkdir -p $O/traces-ab
  for r in 1 2 3; do
    for b in base owed tip; do
      $b/build-dev/mmdriver -t 16 -r 5 -f csv tip/bench/traces/*.rep 2>/dev/null | sed "s|^|$b,$r,|"
    done
  done > $O/traces-ab/runs.csv
}
step traces-ab traces_ab
