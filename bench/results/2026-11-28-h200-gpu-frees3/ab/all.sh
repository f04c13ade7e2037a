#!/bin/bash
# gpu, one device call (2026-11-28):
# 1. A/B: old (9ad0cc4), T (089f2d7: a lane alone marks its Basicblock's tag), TF (1111fc1: + a
#    freed chunk goes straight to the FIFO when its exchange slot looked occupied), TFS (0d4ee94: +
#    a group's frees counted after the return), TFSG (a6bb162: + the published-Superblock glance
#    beside the slot exchange), Gallatin (1aa70ad) beside them; xmc_bench built off the device
#    (Release, CUDA arch 90, device LTO), each case a child process, builds in turn, twice.
# 2. summarize.py picks the tree to check by its pre-registered rule.
# 3. Nsight Compute on the first mixed-size free-all and alloc-all kernels, chosen build and Gallatin.
# 4. Gallatin on every case of the table; scripts/gpu-check on the chosen tree with it.
cd "$(dirname "$0")"
tar xJf bin.tar.xz && tar xJf ext.tar.xz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}:$PWD/bin/lib
mkdir -p /tmp/ab /tmp/check /tmp/gal
date -u | tee /tmp/ab/dates.txt; ldd bin/xmc_bench-old | grep cudart
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee /tmp/ab/device.txt
export BENCH_BUDGET_S=3
run() {  # build round
  local b=$1 r=$2 bin=bin/xmc_bench-$1 a=xmc
  [[ $b == gal ]] && bin=bin/gallatin_bench a=gallatin
  for s in 16 256 1024 0; do $bin --child $a alloc_all default $s; done >> /tmp/ab/$b-$r.csv 2>>/tmp/ab/err.log
  $bin --child $a churn default 0 >> /tmp/ab/$b-$r.csv 2>>/tmp/ab/err.log
  for l in 1 32; do $bin --child $a milthreads default $l; done >> /tmp/ab/$b-$r.csv 2>>/tmp/ab/err.log
}
for r in 1 2; do for b in old T TF TFS TFSG gal; do run $b $r; done; done
unset BENCH_BUDGET_S
date -u | tee -a /tmp/ab/dates.txt
python3 summarize.py /tmp/ab > /tmp/ab/ab.md
cat /tmp/ab/ab.md
chosen=$(tail -1 /tmp/ab/ab.md | awk '{print $2}')
[[ -d var/$chosen ]] || chosen=old
m=gpu__time_duration.sum,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum,lts__t_sectors.sum,lts__t_sectors_srcunit_tex.sum,dram__bytes_read.sum,smsp__thread_inst_executed_per_inst_executed.ratio
for b in $chosen gal; do for k in free alloc; do
  bin=bin/xmc_bench-$b a=xmc; [[ $b == gal ]] && bin=bin/gallatin_bench a=gallatin
  timeout 40 ncu --clock-control none -k regex:bench_${k}_all -c 1 --metrics $m --section WarpStateStats \
    $bin --child $a alloc_all default 0 > /tmp/ab/ncu-$b-$k-mixed.txt 2>&1
done; done
date -u | tee -a /tmp/ab/dates.txt
bin/gallatin_bench --bench milthreads,alloc_all,churn,fill --timeout 6 --out /tmp/gal/gallatin.csv > /tmp/ab/gallatin.log 2>&1
date -u | tee -a /tmp/ab/dates.txt
# The tree checked: the base (every file of a6bb162 but docs, results and traces) with the
# chosen build's src/gpu and tests/gpu, the only folders the builds differ in.
tar czf $OUT/ab.tgz -C /tmp ab
rev=$(cat var/$chosen/REV); tree=/tmp/tree; cp -r base $tree && cp -r ext $tree/.ext && rm -rf $tree/src/gpu $tree/tests/gpu
cp -r var/$chosen/src/gpu $tree/src/gpu && cp -r var/$chosen/tests/gpu $tree/tests/gpu
(cd $tree && OUT=/tmp/check SOURCE_REV=$rev TEST_TIMEOUT=150 SANITIZE_TIMEOUT=120 BENCH_TIMEOUT=6 \
  BENCH_ARGS="--alloc xmc,floor --config default --bench milthreads,alloc_all,churn,fill" \
  timeout 290 scripts/gpu-check /tmp/gal/gallatin.csv) > /tmp/ab/gpu-check.out 2>&1
echo "gpu-check exit $?" | tee -a /tmp/ab/gpu-check.out
date -u | tee -a /tmp/ab/dates.txt
tar czf $OUT/ab.tgz -C /tmp ab
tar czf $OUT/check.tgz -C /tmp check
echo "chosen: $chosen"; tail -25 /tmp/ab/gpu-check.out; tail -3 /tmp/ab/err.log
grep -h -E "gpu__time|op_atom.sum|lts__t_sectors.sum" /tmp/ab/ncu-*.txt
