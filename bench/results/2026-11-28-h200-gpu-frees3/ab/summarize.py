# The A/B table (mean of the two runs' medians per build and cell) and the
# pre-registered choice of the tree to check: along old -> T -> TF -> TFS ->
# TFSG, a step is kept when its target cells are faster (geometric mean of
# their speed ratios >= 1.01) and no measured cell is slower than 0.97x; the
# first step not kept ends the chain.  Usage: summarize.py DIR  (prints the
# table; the last line: "chosen: <build>").
import csv, math, os, sys, collections
out = sys.argv[1]
chain = ["old", "T", "TF", "TFS", "TFSG"]
builds = chain + ["gal"]
v = collections.defaultdict(list)
for b in builds:
    for r in (1, 2):
        p = f"{out}/{b}-{r}.csv"
        if not os.path.exists(p): continue
        for row in csv.reader(open(p)):
            if len(row) > 10 and row[10] in ("ok", "capped"):
                v[(row[0], row[3], row[4], b)].append(float(row[5]))
keys = sorted({k[:3] for k in v})
def mean(k, b):
    x = v.get(k + (b,))
    return sum(x) / len(x) if x else None
def speed(k, new, base):
    n, o = mean(k, new), mean(k, base)
    if not n or not o: return None
    return o / n if k[2].startswith(("free_ms", "ns_per")) else n / o
print("| cell | " + " | ".join(builds) + " | T/old | TF/T | TFS/TF | TFSG/TFS | TFSG/old | TFSG over Gallatin |")
print("|---|" + "---:|" * (len(builds) + 6))
for k in keys:
    cells = [f"{mean(k, b):.4g}" if mean(k, b) else "" for b in builds]
    r = [speed(k, "T", "old"), speed(k, "TF", "T"), speed(k, "TFS", "TF"), speed(k, "TFSG", "TFS"),
         speed(k, "TFSG", "old"), speed(k, "TFSG", "gal")]
    print(f"| {k[0]} {k[1]} {k[2]} | " + " | ".join(cells) + " | " +
          " | ".join(f"{x:.3f}" if x else "" for x in r) + " |")
both = ("", "_steady")
targets = {
    "T": [("alloc_all", "0", m + s) for m in ("alloc_gops", "free_ms") for s in both] +
         [("churn", "0", "churn_gops" + s) for s in both] + [("milthreads", "1", "ns_per_pair" + s) for s in both],
    "TF": [("alloc_all", z, "free_ms" + s) for z in ("16", "256", "0") for s in both] +
          [("churn", "0", "churn_gops" + s) for s in both] + [("milthreads", "32", "ns_per_pair" + s) for s in both],
    "TFS": [("alloc_all", z, "free_ms" + s) for z in ("1024", "0") for s in both],
    "TFSG": [("alloc_all", z, "alloc_gops" + s) for z in ("1024", "0") for s in both] +
            [("churn", "0", "churn_gops" + s) for s in both] + [("milthreads", "1", "ns_per_pair" + s) for s in both],
}
chosen = "old"
print()
for prev, step in zip(chain, chain[1:]):
    t = [speed(k, step, prev) for k in targets[step]]
    t = [x for x in t if x]
    g = math.exp(sum(map(math.log, t)) / len(t)) if t else 0
    allr = [(speed(k, step, prev), k) for k in keys]
    worst = min(((x, k) for x, k in allr if x), default=(0, None))
    keep = g >= 1.01 and worst[0] >= 0.97
    print(f"{step} over {prev}: target cells {g:.3f} (geomean of {len(t)}), worst cell {worst[0]:.3f} {worst[1]}: "
          + ("kept" if keep else "NOT kept"))
    if not keep: break
    chosen = step
print(f"chosen: {chosen}")
