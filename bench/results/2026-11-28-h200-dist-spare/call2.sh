#!/bin/bash
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
T="dist-lists dist-lists-mpi dist-shards dist-nbody"
(cmake -S . -B /tmp/new -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/cn.log 2>&1 && cmake --build /tmp/new -j8 --target $T >>/tmp/cn.log 2>&1 || tail -20 /tmp/cn.log) &
(cmake -S .dev-dist/base -B /tmp/base -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/cb.log 2>&1 && cmake --build /tmp/base -j8 --target $T >>/tmp/cb.log 2>&1 || tail -20 /tmp/cb.log) &
wait
date; git log -1 --format=%h 2>/dev/null
L="--nets shm --reps 5 --schedulers 1 --lens 30000 --append --no-report"
for round in 1 2; do
  for b in base new; do
    python3 bench/dist/run_lists.py --build /tmp/$b --out $OUT/lists-$b $L --workers 8,16 --impls ours-alloc,ours-balloc,mpi-pack,mpi-bulk 2>&1 | grep -E "total|fail"
  done
done
python3 bench/dist/run_lists.py --build /tmp/new --out $OUT/lists-new $L --schedulers 1,2 --workers 8,16 --impls ours-alloc,ours-balloc 2>&1 | grep -E "total|fail"
for b in base new; do
  timeout 60 python3 bench/dist/run_shards.py --build /tmp/$b --out $OUT/shards-$b --workers 2,8,14 --values 64-256 --reps 5 >/dev/null 2>&1
  python3 -c "
import json,sys
for l in open('$OUT/shards-$b/shards.jsonl'):
  r=json.loads(l); d,p=r['dist'],r['pack']
  print('shards $b', r['workers'], 'first dist/pack', d['first_ms'], p['first_ms'], 'x%.2f' % (p['first_ms']/d['first_ms']), 'recv wire', d['wire_ms'], 'migrate', d['migrate_ms'], p['migrate_ms'])
"
done
timeout 100 python3 bench/dist/run_nbody.py --build /tmp/new --out $OUT/nbody-new --bodies 1000000 --steps 2 --warmup 1 --workers 1,8 --layouts "1" --modes local --check none 2>&1 | tail -5
date
