#!/bin/bash
# dist call 4: base 320f907 vs new (pack cache, grant 64, yield when crowded) with the standard commands
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
T="dist-lists dist-lists-mpi dist-shards"
(cmake -S . -B /tmp/new -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/cn.log 2>&1 && cmake --build /tmp/new -j8 --target $T >>/tmp/cn.log 2>&1 || tail -20 /tmp/cn.log) &
(cmake -S .dev-dist/base -B /tmp/base -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/cb.log 2>&1 && cmake --build /tmp/base -j8 --target dist-lists >>/tmp/cb.log 2>&1 || tail -20 /tmp/cb.log) &
wait; date; git log -1 --format=%h 2>/dev/null
L="--nets shm --reps 5 --schedulers 1 --lens 30000 --append --no-report"
python3 bench/dist/run_lists.py --build /tmp/new --out $OUT/lists-new $L --workers 8,16 --impls ours-alloc,ours-balloc,mpi-pack,mpi-bulk 2>&1 | grep -E "total|fail" | sed 's/^/new  /'
python3 bench/dist/run_lists.py --build /tmp/base --out $OUT/lists-base $L --workers 8,16 --impls ours-alloc,ours-balloc 2>&1 | grep -E "total|fail" | sed 's/^/base /'
python3 bench/dist/run_lists.py --build /tmp/new --out $OUT/lists-new $L --workers 8,16 --impls ours-alloc,ours-balloc,mpi-pack 2>&1 | grep -E "total|fail" | sed 's/^/new  /'
timeout 80 python3 bench/dist/run_shards.py --build /tmp/new --out $OUT/shards --workers 2,8,14 --values 64-256 --reps 5 >/dev/null 2>&1
python3 -c "
import json
for l in open('$OUT/shards/shards.jsonl'):
  r=json.loads(l); d,p=r['dist'],r['pack']
  print('shards', r['workers'], 'first dist/pack', d['first_ms'], p['first_ms'], 'x%.2f' % (p['first_ms']/d['first_ms']), 'migrate', d['migrate_ms'], p['migrate_ms'])
"
rm -f $OUT/shards/*.png
date
