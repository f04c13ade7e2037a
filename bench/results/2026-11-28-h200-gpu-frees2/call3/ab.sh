#!/bin/bash
# gpu A/B: old 320f907 against E (gpu5 HEAD), xmc_bench built on the device with device LTO, run in turn twice
for b in old E; do
  (cmake -S .dev-gpu/$b -B /tmp/$b -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMANYMALLOC_BUILD_TESTS=OFF >/tmp/$b.log 2>&1 && cmake --build /tmp/$b --target xmc_bench -j8 >>/tmp/$b.log 2>&1 || tail -20 /tmp/$b.log) &
done
wait; date; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export BENCH_BUDGET_S=2
for r in 1 2; do
  for b in old E; do
    for s in 16 256 1024 0; do /tmp/$b/xmc_bench --child xmc alloc_all default $s >> $OUT/$b-$r.csv 2>/dev/null; done
    /tmp/$b/xmc_bench --child xmc churn default 0 >> $OUT/$b-$r.csv 2>/dev/null
    for l in 32; do /tmp/$b/xmc_bench --child xmc milthreads default $l >> $OUT/$b-$r.csv 2>/dev/null; done
  done
done
date
python3 - <<'PY'
import csv, os, collections
out = os.environ["OUT"]
v = collections.defaultdict(list)
for b in ("old", "E"):
    for r in (1, 2):
        p = f"{out}/{b}-{r}.csv"
        if not os.path.exists(p): continue
        for row in csv.reader(open(p)):
            if len(row) > 6 and row[10:11] == ["ok"]:
                v[(row[0], row[3], row[4], b)].append(float(row[5]))
keys = sorted({k[:3] for k in v})
for k in keys:
    o, e = v.get(k + ("old",), []), v.get(k + ("E",), [])
    if o and e:
        mo, me = sum(o) / len(o), sum(e) / len(e)
        print(f"{k[0]:11s} {k[1]:>5s} {k[2]:22s} old {mo:10.5f} E {me:10.5f}  E/old {me / mo:.3f}")
PY
