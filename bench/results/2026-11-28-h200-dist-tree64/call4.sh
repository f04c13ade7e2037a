#!/bin/bash
# dist call 4: 64 workers, one scheduler against 1,4 and 1,4,16 trees, remote and leased, at the committed head (for the scaling model's check)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
cmake -S . -B /tmp/head -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/c.log 2>&1 && cmake --build /tmp/head -j16 --target dist-tree >>/tmp/c.log 2>&1 || tail -20 /tmp/c.log
date
for run in run1 run2; do
  mkdir -p $OUT/$run
  for LEASE in 0 1; do
    for L in 1 1,4 1,4,16; do
      case $L in 1) NP=65;; 1,4) NP=69;; 1,4,16) NP=85;; esac
      MANYMALLOC_DIST_LEASE=$LEASE MANYMALLOC_SCHEDULERS=$L timeout 60 mpirun --oversubscribe -np $NP /tmp/head/dist-tree --out $OUT/$run --nodes 30000 --reps 3 --stages 2 2>&1 | tail -1
    done
  done
done
date
