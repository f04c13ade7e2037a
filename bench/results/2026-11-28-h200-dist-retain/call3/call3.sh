#!/bin/bash
# dist call 3: Barnes-Hut 10^6, 8 workers: the scheduler spinning (auto: 9 ranks on 16 cores) against napping, interleaved; one serial run
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
cmake -S . -B /tmp/head -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/c.log 2>&1 && cmake --build /tmp/head -j16 --target dist-nbody >>/tmp/c.log 2>&1 || tail -20 /tmp/c.log
date
N="--bodies 1000000 --steps 2 --warmup 2 --layouts 1 --modes local --check none --no-report"
timeout 100 python3 bench/dist/run_nbody.py --build /tmp/head --out $OUT/serial $N --workers 1 2>&1 | grep -E "fail|error"
for round in 1 2; do
  for idle in auto nap; do
    MANYMALLOC_DIST_IDLE=$idle timeout 40 python3 bench/dist/run_nbody.py --build /tmp/head --out $OUT/w8-$idle $N --workers 8 2>&1 | grep -E "fail|error"
  done
done
rm -f $OUT/*/*.pos
python3 -c "
import json,glob
for f in sorted(glob.glob('$OUT/*/*.jsonl')):
  for l in open(f):
    r=json.loads(l); print(f.split('/')[-2], r['workers'], 'step_ms', round(r['step_ms'],1), 'force', round(r['phases_ms']['force'],1), 'balance', round(r['phases_ms']['balance'],1), 'imb', r['force_imbalance_per_step'], 'sched', r['sched_frac'], 'slowest', max(range(len(r.get('per_worker',[]))), key=lambda i: r['per_worker'][i]['force_ms']) if r.get('per_worker') else '')
"
date
