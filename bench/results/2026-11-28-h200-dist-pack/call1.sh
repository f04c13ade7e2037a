#!/bin/bash
# dist call 1: committed code; CMA probe; lists 8/16 with vader single copy none vs cma; nbody; shards
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T="dist-lists dist-lists-mpi dist-shards dist-nbody"
cmake -S . -B /tmp/new -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/cn.log 2>&1 && cmake --build /tmp/new -j16 --target $T >>/tmp/cn.log 2>&1 || tail -20 /tmp/cn.log
date; nproc; cat /proc/sys/kernel/yama/ptrace_scope 2>&1; cat /sys/kernel/mm/transparent_hugepage/enabled
mpirun --oversubscribe -np 2 --mca btl_vader_single_copy_mechanism cma --mca btl_base_verbose 0 /tmp/new/dist-lists-mpi --len 30000 --reps 2 --variant bulk 2>&1 | tail -3
L="--nets shm --reps 5 --schedulers 1 --lens 30000 --append --no-report"
for round in 1 2; do
  for sc in none cma; do
    OMPI_MCA_btl_vader_single_copy_mechanism=$sc python3 bench/dist/run_lists.py --build /tmp/new --out $OUT/lists-$sc $L --workers 8,16 --impls ours-alloc,ours-balloc,mpi-pack,mpi-bulk 2>&1 | grep -E "total|fail" | sed "s/^/$sc /"
  done
done
export OMPI_MCA_btl_vader_single_copy_mechanism=none
timeout 90 python3 bench/dist/run_shards.py --build /tmp/new --out $OUT/shards --workers 2,8,14 --values 64-256 --reps 5 >/dev/null 2>&1
python3 -c "
import json,sys
for l in open('$OUT/shards/shards.jsonl'):
  r=json.loads(l); d,p=r['dist'],r['pack']
  print('shards', r['workers'], 'first dist/pack', d['first_ms'], p['first_ms'], 'x%.2f' % (p['first_ms']/d['first_ms']), 'recv wire', d['wire_ms'], 'migrate', d['migrate_ms'], p['migrate_ms'])
"
timeout 120 python3 bench/dist/run_nbody.py --build /tmp/new --out $OUT/nbody --bodies 1000000 --steps 2 --warmup 1 --workers 1,8 --layouts "1" --modes local --check none 2>&1 | tail -5
date
