#!/bin/bash
# dist call 5: mid 05306b2 (pack cache, grant 64, yield) vs new (lease prefault, receive posted before the prefault)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
T="dist-lists dist-lists-mpi dist-shards"
(cmake -S . -B /tmp/new -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/cn.log 2>&1 && cmake --build /tmp/new -j8 --target $T >>/tmp/cn.log 2>&1 || tail -20 /tmp/cn.log) &
(cmake -S .dev-dist/base -B /tmp/mid -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/cb.log 2>&1 && cmake --build /tmp/mid -j8 --target dist-lists dist-shards >>/tmp/cb.log 2>&1 || tail -20 /tmp/cb.log) &
wait; date
L="--nets shm --reps 5 --schedulers 1 --lens 30000 --append --no-report"
python3 bench/dist/run_lists.py --build /tmp/new --out $OUT/lists-new $L --workers 8,16 --impls ours-alloc,ours-balloc,mpi-pack,mpi-bulk 2>&1 | grep -E "total|fail" | sed 's/^/new /'
python3 bench/dist/run_lists.py --build /tmp/mid --out $OUT/lists-mid $L --workers 8,16 --impls ours-alloc,ours-balloc 2>&1 | grep -E "total|fail" | sed 's/^/mid /'
python3 bench/dist/run_lists.py --build /tmp/new --out $OUT/lists-new $L --workers 8,16 --impls ours-alloc,ours-balloc,mpi-pack 2>&1 | grep -E "total|fail" | sed 's/^/new /'
python3 bench/dist/run_lists.py --build /tmp/mid --out $OUT/lists-mid $L --workers 8,16 --impls ours-alloc,ours-balloc 2>&1 | grep -E "total|fail" | sed 's/^/mid /'
for b in new mid; do
  timeout 80 python3 bench/dist/run_shards.py --build /tmp/$b --out $OUT/shards-$b --workers 2,8,14 --values 64-256 --reps 5 >/dev/null 2>&1
  rm -f $OUT/shards-$b/*.png $OUT/shards-$b/report.md
  python3 -c "
import json
for l in open('$OUT/shards-$b/shards.jsonl'):
  r=json.loads(l); d,p=r['dist'],r['pack']
  print('shards $b', r['workers'], 'first dist/pack', d['first_ms'], p['first_ms'], 'x%.2f' % (p['first_ms']/d['first_ms']), 'migrate', d['migrate_ms'], p['migrate_ms'])
"
done
date
