#!/bin/bash
# dist call 5: the final head; the list exchange and Barnes-Hut once more with the standard commands
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
T="dist-lists dist-lists-mpi dist-nbody"
cmake -S . -B /tmp/head -DCMAKE_BUILD_TYPE=Release -DMANYMALLOC_BUILD_TESTS=OFF -DCMAKE_CUDA_COMPILER= >/tmp/c.log 2>&1 && cmake --build /tmp/head -j16 --target $T >>/tmp/c.log 2>&1 || tail -20 /tmp/c.log
date
python3 bench/dist/run_lists.py --build /tmp/head --out $OUT/lists --nets shm --reps 5 --schedulers 1 --lens 30000 --workers 8,16 --impls ours-alloc,ours-balloc,mpi-pack,mpi-bulk --append --no-report 2>&1 | grep -E "total|fail"
timeout 150 python3 bench/dist/run_nbody.py --build /tmp/head --out $OUT/nbody --bodies 1000000 --steps 2 --warmup 2 --workers 1,8 --layouts 1 --modes local --check none 2>&1 | grep -E "met|NOT"
rm -f $OUT/nbody/*.png $OUT/nbody/report.md $OUT/nbody/*.pos
date
