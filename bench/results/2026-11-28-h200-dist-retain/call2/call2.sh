#!/bin/bash
# dist call 2: the committed head; the one-host figures, shards with retention off and on, Barnes-Hut cost models
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
T="dist-lists dist-lists-mpi dist-shards dist-nbody"
cmake -S . -B /tmp/head -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/c.log 2>&1 && cmake --build /tmp/head -j16 --target $T >>/tmp/c.log 2>&1 || tail -20 /tmp/c.log
date; git log --oneline -1 | cut -c1-60
for round in 1 2; do
  python3 bench/dist/run_lists.py --build /tmp/head --out $OUT/lists --nets shm --reps 5 --schedulers 1 --lens 30000 --workers 8,16 --impls ours-alloc,ours-balloc,mpi-pack,mpi-bulk --append --no-report 2>&1 | grep -E "total|fail"
done
for ms in 1000 0; do
  echo "== shards RETAIN_MS=$ms"
  MANYMALLOC_DIST_RETAIN_MS=$ms timeout 80 python3 bench/dist/run_shards.py --build /tmp/head --out $OUT/shards-$ms --workers 2,8,14 --values 64-256 --reps 5 >/dev/null 2>&1
  rm -f $OUT/shards-$ms/*.png $OUT/shards-$ms/report.md
  python3 -c "
import json
for l in open('$OUT/shards-$ms/shards.jsonl'):
  r=json.loads(l); d,p=r['dist'],r['pack']
  print('shards', r['workers'], 'first dist/pack', d['first_ms'], p['first_ms'], 'x%.2f' % (p['first_ms']/d['first_ms']), 'migrate', d['migrate_ms'], p['migrate_ms'])
"
done
timeout 150 python3 bench/dist/run_nbody.py --build /tmp/head --out $OUT/nbody --bodies 1000000 --steps 2 --warmup 2 --workers 1,8 --layouts 1 --modes local --check none 2>&1 | grep -E "met|NOT"
timeout 40 python3 bench/dist/run_nbody.py --build /tmp/head --out $OUT/nbody-time --bodies 1000000 --steps 2 --warmup 2 --workers 8 --layouts 1 --modes local --check none --cost time --no-report 2>&1 | tail -2
rm -f $OUT/nbody/*.png $OUT/nbody/report.md $OUT/nbody/*.pos $OUT/nbody-time/*.pos
python3 -c "
import json,glob
for f in sorted(glob.glob('$OUT/nbody*/*.jsonl')):
  for l in open(f):
    r=json.loads(l); print(f.split('/')[-2], r['workers'], 'cost', r['cost'], 'step_ms', round(r['step_ms'],1), 'force', round(r['phases_ms']['force'],1), 'balance', round(r['phases_ms']['balance'],1), 'imb', r['force_imbalance'], 'sched', r['sched_frac'])
"
date
