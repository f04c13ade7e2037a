#!/bin/bash
# dist call 3: A/B base 320f907 vs new (grant 64, yield when crowded, nap slack) at 8/16 workers; nbody warm-up 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
T="dist-lists dist-lists-mpi dist-nbody"
(cmake -S . -B /tmp/new -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/cn.log 2>&1 && cmake --build /tmp/new -j8 --target $T >>/tmp/cn.log 2>&1 || tail -20 /tmp/cn.log) &
(cmake -S .dev-dist/base -B /tmp/base -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/cb.log 2>&1 && cmake --build /tmp/base -j8 --target dist-lists >>/tmp/cb.log 2>&1 || tail -20 /tmp/cb.log) &
wait; date; mkdir -p $OUT/l
H=$(hostname)
{ echo "rank 0=$H slot=0-15"; for i in $(seq 1 16); do echo "rank $i=$H slot=$((i-1))"; done; } > /tmp/rf16
run() { # build place variant np env...
  local b=$1 place=$2 v=$3 np=$4; shift 4
  local bind="--bind-to none"; [ $place = rf ] && bind="--rankfile /tmp/rf$((np-1))"; [ $place = core ] && bind="--bind-to core"
  env "$@" mpirun --oversubscribe $bind -np $np /tmp/$b/dist-lists --out $OUT/l --len 30000 --reps 5 --variant $v 2>&1 | grep total | sed "s/^/$b $place $* W=$((np-1)) /;s/dist-lists: //;s/, 16 processes\|, 8 processes//"
}
for round in 1 2; do
  for v in alloc balloc; do
    run base none $v 17
    run new none $v 17
    run new rf $v 17
    run new none $v 17 MANYMALLOC_DIST_IDLE=spin
  done
  mpirun --oversubscribe --bind-to core -np 16 /tmp/new/dist-lists-mpi --out $OUT/l --len 30000 --reps 5 --variant pack 2>&1 | grep total
  for v in alloc balloc; do
    run base core $v 9
    run new core $v 9
  done
  mpirun --oversubscribe --bind-to core -np 8 /tmp/new/dist-lists-mpi --out $OUT/l --len 30000 --reps 5 --variant pack 2>&1 | grep total
done
date
timeout 200 python3 bench/dist/run_nbody.py --build /tmp/new --out $OUT/nbody --bodies 1000000 --steps 2 --warmup 2 --workers 1,8 --layouts 1 --modes local --check none 2>&1 | tail -4
python3 -c "
import json
for l in open('$OUT/nbody/nbody.jsonl'):
  r=json.loads(l); print(r['workers'], r['step_ms'], r['phases_ms']['force'], r['phases_ms']['balance'], r['force_imbalance_per_step'], r['step_ms_each'])
"
date
