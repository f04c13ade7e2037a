#!/bin/bash
# dist A/B: freed memory retained (default) against given back at once (MANYMALLOC_DIST_RETAIN_MS=0), same build, interleaved
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
T="dist-lists dist-lists-mpi dist-shards dist-nbody"
cmake -S . -B /tmp/new -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/c.log 2>&1 && cmake --build /tmp/new -j16 --target $T >>/tmp/c.log 2>&1 || tail -20 /tmp/c.log
date; git log --oneline -1
L="--nets shm --reps 5 --schedulers 1 --lens 30000 --workers 8,16 --append --no-report"
for round in 1 2; do
  for ms in 0 1000; do
    echo "== round $round RETAIN_MS=$ms"
    MANYMALLOC_DIST_RETAIN_MS=$ms python3 bench/dist/run_lists.py --build /tmp/new --out $OUT/lists-$ms $L --impls ours-alloc,ours-balloc,mpi-pack 2>&1 | grep -E "total|fail"
  done
done
python3 bench/dist/run_lists.py --build /tmp/new --out $OUT/lists-bulk $L --impls mpi-bulk 2>&1 | grep -E "total|fail"
for ms in 0 1000; do
  echo "== shards RETAIN_MS=$ms"
  MANYMALLOC_DIST_RETAIN_MS=$ms timeout 80 python3 bench/dist/run_shards.py --build /tmp/new --out $OUT/shards-$ms --workers 2,8,14 --values 64-256 --reps 5 >/dev/null 2>&1
  rm -f $OUT/shards-$ms/*.png $OUT/shards-$ms/report.md
  python3 -c "
import json
for l in open('$OUT/shards-$ms/shards.jsonl'):
  r=json.loads(l); d,p=r['dist'],r['pack']
  print('shards', r['workers'], 'first dist/pack', d['first_ms'], p['first_ms'], 'x%.2f' % (p['first_ms']/d['first_ms']), 'migrate', d['migrate_ms'], p['migrate_ms'])
"
done
date
