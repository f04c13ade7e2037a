#!/bin/bash
# dist call 2: 16 workers, where the scheduler runs: unbound / workers bound + scheduler floating; timer slack A/B; yield_when_idle; nbody cost models
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
T="dist-lists dist-lists-mpi dist-nbody"
(cmake -S . -B /tmp/new -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/cn.log 2>&1 && cmake --build /tmp/new -j8 --target $T >>/tmp/cn.log 2>&1 || tail -20 /tmp/cn.log) &
(cmake -S .dev-dist/base -B /tmp/base -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/cb.log 2>&1 && cmake --build /tmp/base -j8 --target $T >>/tmp/cb.log 2>&1 || tail -20 /tmp/cb.log) &
wait; date; mkdir -p $OUT/l $OUT/nb-interactions $OUT/nb-visits $OUT/nb-time
H=$(hostname); W=16
{ echo "rank 0=$H slot=0-15"; for i in $(seq 1 $W); do echo "rank $i=$H slot=$((i-1))"; done; } > /tmp/rf16
{ echo "rank 0=$H slot=0-15"; for i in $(seq 1 8); do echo "rank $i=$H slot=$((i-1))"; done; } > /tmp/rf8
run() { # build place variant extra-env...
  local b=$1 place=$2 v=$3 np=$4; shift 4
  local bind="--bind-to none"; [ $place = rf ] && bind="--rankfile /tmp/rf$((np-1))"; [ $place = core ] && bind="--bind-to core"
  env "$@" mpirun --oversubscribe $bind -np $np /tmp/$b/dist-lists --out $OUT/l --len 30000 --reps 5 --variant $v 2>&1 | grep total | sed "s/^/$b $place $* W=$((np-1)) /"
}
for round in 1 2; do
  for v in balloc alloc; do
    run base none $v 17
    run base rf $v 17
    run new none $v 17
    run new rf $v 17
    run new rf $v 17 OMPI_MCA_mpi_yield_when_idle=1
    run new rf $v 17 MANYMALLOC_DIST_IDLE=spin
  done
  mpirun --oversubscribe --bind-to core -np 16 /tmp/new/dist-lists-mpi --out $OUT/l --len 30000 --reps 5 --variant pack 2>&1 | grep total
  OMPI_MCA_mpi_yield_when_idle=1 mpirun --oversubscribe --bind-to core -np 16 /tmp/new/dist-lists-mpi --out $OUT/l --len 30000 --reps 5 --variant pack 2>&1 | sed 's/^/yield /' | grep total
  for v in balloc alloc; do
    run base core $v 9
    run new core $v 9
    run new rf $v 9
  done
  mpirun --oversubscribe --bind-to core -np 8 /tmp/new/dist-lists-mpi --out $OUT/l --len 30000 --reps 5 --variant pack 2>&1 | grep total
done
date
for c in interactions visits time; do
  timeout 100 mpirun --oversubscribe --bind-to core -np 9 /tmp/new/dist-nbody --out $OUT/nb-$c --bodies 1000000 --steps 3 --warmup 1 --cost $c --check none 2>&1 | grep -E "step|imbal" | head -3
  python3 -c "
import json
for l in open('$OUT/nb-$c/nbody.jsonl'):
  r=json.loads(l); print('$c', r['step_ms'], r['phases_ms']['force'], r['phases_ms']['balance'], r['force_imbalance_per_step'], r['interactions_per_body'])
"
done
date
