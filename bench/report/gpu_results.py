# SPDX-License-Identifier: Apache-2.0
"""The GPU results: the CSV files xmc_bench writes (scripts/gpu-check's
results.csv, and other allocators' results on the same cases beside it),
read into one table of rows, with the cases, the issue's goals and the cells
against Gallatin that the GPU section and its plots share."""
import csv
import math
import os

SIZES = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 0]
LANES = [1, 2, 4, 8, 16, 32]
BUFFERS = [1, 2, 4, 8, 16, 32]
THREADS = [4 ** k for k in range(11)]
NAMES = {"xmc": "manymalloc", "cuda": "CUDA malloc", "gallatin": "Gallatin",
         "floor": "no allocator (the kernel alone)"}
# One colour per series in every panel; ablations share the fourth.
COLORS = {"manymalloc": "C0", "CUDA malloc": "C1", "Gallatin": "C2",
          "manymalloc, no coalescing": "C3", "manymalloc, no superblocks": "C3",
          "no allocator (the kernel alone)": "grey"}

# The targets: (label, bench, param, metric, CUDA there, Gallatin there,
# goal, direction). Measured there on an H200 with 2^20 threads.
GOALS = [
    ("MilThreads 8 B, 32 lanes (ns/pair)", "milthreads", 32, "ns_per_pair", "418.7", "0.097", 0.065, "<="),
    ("MilThreads 8 B, 8 lanes (ns/pair)", "milthreads", 8, "ns_per_pair", "264.8", "0.291", 0.19, "<="),
    ("MilThreads 8 B, 1 lane (ns/pair)", "milthreads", 1, "ns_per_pair", "1862.7", "1.788", 1.2, "<="),
    ("alloc-all 16 B (G allocs/s)", "alloc_all", 16, "alloc_gops", "0.0035", "9.9", 15, ">="),
    ("alloc-all 64 B (G allocs/s)", "alloc_all", 64, "alloc_gops", "0.0034", "4.1", 6.2, ">="),
    ("alloc-all 256 B (G allocs/s)", "alloc_all", 256, "alloc_gops", "0.00025", "1.13", 1.7, ">="),
    ("alloc-all 1 KiB (G allocs/s)", "alloc_all", 1024, "alloc_gops", "too slow", "0.57", 0.86, ">="),
    ("alloc-all 4 KiB (G allocs/s)", "alloc_all", 4096, "alloc_gops", "too slow", "0.27", 0.41, ">="),
    ("free-all, slowest size 16 B..4 KiB (ms)", "alloc_all", "max", "free_ms", "133-461", "0.017-0.029", 0.03, "<="),
    ("heap usable, worst size 16 B..4 KiB + mixed", "fill", "min", "heap_fraction", "", "", 0.85, ">="),
]


def size_label(s):
    return "mixed" if s == 0 else (f"{s // 1024} KiB" if s >= 1024 else f"{s} B")


# The cells where ours must run at >= 1.5x Gallatin's speed, each on a fresh
# heap and again on the heap the first run left ("_steady"): (label, bench,
# param, metric, lower is better).
GALLATIN_CELLS = (
    [(f"MilThreads {l} lane{'s' if l > 1 else ''}", "milthreads", l, "ns_per_pair", True) for l in (1, 8, 32)]
    + [(f"alloc-all {size_label(s)}", "alloc_all", s, "alloc_gops", False) for s in SIZES]
    + [(f"free-all {size_label(s)}", "alloc_all", s, "free_ms", True) for s in SIZES]
    + [("churn (mixed)", "churn", 0, "churn_gops", False)])
GALLATIN_GOAL = 1.5


def load(paths):
    """Rows keyed by (bench, alloc, config, param, metric); meta lines; allocators seen."""
    rows, meta, allocs = {}, [], []
    for i, path in enumerate(paths):
        with open(path) as f:
            lines = [l for l in f if l.strip()]
        origin = f"{os.path.basename(path)}: " if i else ""
        meta += [origin + l[1:].strip() for l in lines if l.startswith("#")]
        for r in csv.DictReader(l for l in lines if not l.startswith("#")):
            r["param"] = int(r["param"])
            rows[(r["bench"], r["alloc"], r["config"], r["param"], r["metric"])] = r
            if r["alloc"] not in allocs:
                allocs.append(r["alloc"])
    return rows, meta, allocs


class Results:
    def __init__(self, rows):
        self.rows = rows

    def row(self, bench, alloc, config, param, metric):
        r = self.rows.get((bench, alloc, config, param, metric))
        return r or self.rows.get((bench, alloc, config, param, "-"))

    def value(self, bench, alloc, config, param, metric):
        """The number, or None when the case did not give one."""
        r = self.row(bench, alloc, config, param, metric)
        if r is None or r["metric"] == "-":
            return None
        v = float(r["value"])
        return None if math.isnan(v) else v

    def cell(self, bench, alloc, config, param, metric):
        """Formatted value with its caveats: failed/timeout, capped reps, NULLs, bad blocks."""
        r = self.row(bench, alloc, config, param, metric)
        if r is None:
            return ""
        if r["metric"] == "-":
            return r["status"]
        text = fmt(float(r["value"]))
        notes = []
        if r["status"] == "capped":
            notes.append(f"{r['reps']} run{'s' if r['reps'] != '1' else ''}")
        if bench != "fill" and int(r["nulls"]):
            notes.append(f"{r['nulls']} NULL")
        if int(r["bad"]):
            notes.append(f"{r['bad']} BAD")
        return text + (f" ({', '.join(notes)})" if notes else "")


def fmt(v):
    if v is None or math.isnan(v):
        return "-"
    if v == 0:
        return "0"
    a = abs(v)
    return f"{v:.3g}" if a < 1000 else f"{v:.0f}"


def speedup(res, bench, param, metric, lower):
    """Ours over Gallatin's speed in one cell, or None."""
    ours = res.value(bench, "xmc", "default", param, metric)
    theirs = res.value(bench, "gallatin", "default", param, metric)
    if not ours or not theirs:
        return None
    return theirs / ours if lower else ours / theirs
