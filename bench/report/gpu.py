#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/gpu/report.py: tables (report.md) and plots (bench.png, and
vs_gallatin.png where Gallatin's results are given) from the CSV files
xmc_bench writes, ours and CUDA's malloc beside the goals of the issues.
Further CSV files of the same format (another allocator run on the same
cases) are merged in as extra columns.

    report.py --out DIR results.csv [more.csv ...]
"""
import argparse
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


def table(header, body):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in line) + " |" for line in body]
    return "\n".join(out) + "\n"


# ---- the goals table ------------------------------------------------------------

def goal_measure(res, alloc, bench, param, metric):
    """One goal's figure for one allocator, and the text to show for it."""
    if param in ("max", "min"):
        sizes = SIZES[:-1] if bench == "alloc_all" else SIZES
        vals = [res.value(bench, alloc, "default", s, metric) for s in sizes]
        got = [v for v in vals if v is not None]
        if not got:
            return None, ""
        v = max(got) if param == "max" else min(got)
        missing = len(vals) - len(got)
        return v, fmt(v) + (f" ({missing} sizes without result)" if missing else "")
    v = res.value(bench, alloc, "default", param, metric)
    return v, res.cell(bench, alloc, "default", param, metric)


def goals_section(res, allocs):
    header = ["case", "manymalloc", "CUDA malloc"]
    if "gallatin" in allocs:
        header.append("Gallatin (here)")
    header += ["CUDA (issue, H200)", "Gallatin (issue, H200)", "goal", "met"]
    body = []
    for label, bench, param, metric, cuda_ref, gal_ref, goal, op in GOALS:
        ours, ours_text = goal_measure(res, "xmc", bench, param, metric)
        line = [label, ours_text, goal_measure(res, "cuda", bench, param, metric)[1]]
        if "gallatin" in allocs:
            line.append(goal_measure(res, "gallatin", bench, param, metric)[1])
        met = ours is not None and (ours <= goal if op == "<=" else ours >= goal)
        line += [cuda_ref, gal_ref, f"{op} {goal}", "yes" if met else "NO"]
        body.append(line)
    return "## Goals of the issue\n\n" + table(header, body)


def speedup(res, bench, param, metric, lower):
    """Ours over Gallatin's speed in one cell, or None."""
    ours = res.value(bench, "xmc", "default", param, metric)
    theirs = res.value(bench, "gallatin", "default", param, metric)
    if not ours or not theirs:
        return None
    return theirs / ours if lower else ours / theirs


def gallatin_section(res):
    header = ["cell", "manymalloc", "Gallatin", "speed ratio", "manymalloc steady", "Gallatin steady",
              "speed ratio steady", f">= {GALLATIN_GOAL}x"]
    body = []
    for label, bench, param, metric, lower in GALLATIN_CELLS:
        line, met = [label], True
        for m in (metric, metric + "_steady"):
            r = speedup(res, bench, param, m, lower)
            met = met and r is not None and r >= GALLATIN_GOAL
            line += [res.cell(bench, "xmc", "default", param, m), res.cell(bench, "gallatin", "default", param, m),
                     fmt(r) + "x" if r else "-"]
        body.append(line + ["yes" if met else "NO"])
    return ("## Against Gallatin, cell by cell\n\nSpeed ratio: Gallatin's time over ours (ns, ms) or our "
            "rate over Gallatin's (G/s). 'steady': the same kernel run again on the heap the first run "
            "left, without re-initializing it (what a long-running code sees).\n\n"
            + table(header, body))


def graph_section(res, allocs):
    cols = [a for a in ["xmc"] + allocs if a not in ("floor",)]
    cols = list(dict.fromkeys(cols))
    metrics = [("insert_medges", "inserts M edges/s"), ("delete_medges", "deletes M edges/s"),
               ("held_mib_inserted", "heap held after inserts MiB"),
               ("held_mib_deleted", "heap held after deletes MiB"),
               ("arrays_mib_inserted", "arrays after inserts MiB"),
               ("arrays_mib_deleted", "arrays after deletes MiB")]
    body = [[NAMES.get(a, a)] + [res.cell("graph", a, "default", 0, m) for m, _ in metrics] for a in cols]
    return ("## Dynamic graph\n\n2^20 vertices, each with an adjacency array on the heap; 2^24 edges "
            "inserted in 16 batches (sources skewed: the top vertex gets about 1/1024 of the edges), "
            "one thread per vertex of a batch growing its array by allocate-copy-free to the next "
            "power of two; then three edges in four deleted in 16 batches, arrays shrunk to twice their "
            "size when a quarter full and freed when empty. Checked against a host model after each "
            "phase of the first run. 'arrays': the bytes of the arrays the vertices hold (the same for "
            "every allocator); 'heap held': the allocator's own count of bytes in use, where it keeps "
            "one.\n\n" + table(["allocator"] + [h for _, h in metrics], body))


# ---- the per-benchmark tables ------------------------------------------------------

def columns(allocs, extra=(), floor=False):
    """(header, alloc, config) for each column: ours first, then the others;
    the kernel without an allocator only where asked (it runs MilThreads only)."""
    cols = [("manymalloc", "xmc", "default")] + list(extra)
    cols += [(NAMES.get(a, a), a, "default") for a in allocs if a != "xmc" and (floor or a != "floor")]
    return cols


def sweep_section(res, title, bench, params, label, metric, cols):
    """A table of one metric over params; nothing when no case of it ran."""
    body = [[label(p)] + [res.cell(bench, a, c, p, metric) for _, a, c in cols] for p in params]
    if not any(cell for line in body for cell in line[1:]):
        return ""
    return f"## {title}\n\n" + table([""] + [h for h, _, _ in cols], body)


def scaling_section(res, allocs):
    cols = columns(allocs, [("manymalloc, no superblocks", "xmc", "nosuper")], floor=True)
    header = ["threads"]
    for h, _, _ in cols:
        header += [f"{h} ns/pair", f"{h} speedup"]
    if not any(res.value("scaling", a, c, t, "ns_per_pair") for t in THREADS for _, a, c in cols):
        return ""
    body = []
    for t in THREADS:
        line = [t]
        for _, a, c in cols:
            one = res.value("scaling", a, c, 1, "ns_per_pair")
            v = res.value("scaling", a, c, t, "ns_per_pair")
            line += [res.cell("scaling", a, c, t, "ns_per_pair"), fmt(one / v) if one and v else "-"]
        body.append(line)
    return ("## Thread scaling (XMalloc 2010, Fig. 8)\n\n8-byte pairs, up to 1024 per thread "
            "and 2^20 in all; speedup over one thread.\n\n" + table(header, body))


def alloc_all_section(res, allocs):
    cols = columns(allocs)
    header = ["size"] + [f"{h} alloc G/s" for h, _, _ in cols] + [f"{h} free ms" for h, _, _ in cols]
    body = []
    for s in SIZES:
        body.append([size_label(s)] + [res.cell("alloc_all", a, c, s, "alloc_gops") for _, a, c in cols]
                    + [res.cell("alloc_all", a, c, s, "free_ms") for _, a, c in cols])
    warp = ["64 B, one allocation per warp"] + \
        [res.cell("warp_alloc", a, c, 64, "alloc_gops") for _, a, c in cols] + \
        [res.cell("warp_alloc", a, c, 64, "free_ms") for _, a, c in cols]
    steady = [[size_label(s)] + [res.cell("alloc_all", a, c, s, "alloc_gops_steady") for _, a, c in cols]
              + [res.cell("alloc_all", a, c, s, "free_ms_steady") for _, a, c in cols] for s in SIZES]
    churn = [[NAMES.get(a, a), res.cell("churn", a, "default", 0, "churn_gops"),
              res.cell("churn", a, "default", 0, "churn_gops_steady")] for _, a, _ in cols]
    return ("## Alloc-all / free-all, 2^20 threads\n\nOne block per thread (G allocations/s for the "
            "allocating kernel, ms for the freeing kernel, which only frees: every block is read back "
            "in an untimed kernel between the two); the last row has lane 0 of each warp "
            "allocate 32 x 64 B for its warp, counted per thread.\n\n" + table(header, body + [warp])
            + "\n### Steady state: the same alloc-all and free-all run again on the heap the first "
            "pair left\n\n" + table(header, steady)
            + "\n### Churn: 10 rounds in which every thread frees its block and allocates one of "
            "another size (mixed 16 B..4 KiB), G free+alloc pairs/s; then 10 more (steady)\n\n"
            + table(["allocator", "G pairs/s", "G pairs/s steady"], churn))


def problems_section(rows):
    bad = [r for r in rows.values() if r["status"] in ("failed", "timeout")
           or int(r["bad"]) or (r["bench"] != "fill" and int(r["nulls"]))]
    if not bad:
        return "## Problems\n\nNone: every case finished, no NULL where memory was left, every block read back.\n"
    body = [[r["bench"], r["alloc"], r["config"], r["param"], r["status"], r["nulls"], r["bad"],
             r["note"]] for r in bad]
    return "## Problems\n\n" + table(["bench", "alloc", "config", "param", "status", "NULLs", "bad",
                                      "note"], body)


def write_report(res, rows, meta, allocs, out):
    cols = columns(allocs)
    parts = ["# manymalloc GPU benchmarks\n\n" + "".join(f"- {m}\n" for m in meta),
             "Every figure is the median of 5 timed runs after a warm-up (CUDA events around each "
             "kernel; the heap re-initialized or fully freed between runs). '(n runs)': a slow case "
             "got fewer runs within its time cap; 'failed'/'timeout': the case's child process died "
             "or ran out of time. Written by bench/gpu/report.py from results.csv.\n",
             goals_section(res, allocs)]
    if "gallatin" in allocs:
        parts.append(gallatin_section(res))
    parts += [
             sweep_section(res, "MilThreads, ns per 8-byte alloc+free pair (XMalloc 2010 Fig. 2; "
                           "XMalloc 2010b Fig. 2, 5)\n\n2^20 pairs in every row: L active lanes "
                           "per warp means 2^20 x 32/L threads launched, lanes L..31 idle",
                           "milthreads", LANES, lambda p: f"{p} lanes",
                           "ns_per_pair", columns(allocs, [("manymalloc, no coalescing", "xmc", "nocoal")], floor=True)),
             sweep_section(res, "MilThreads, steady state: the kernel run again on the heap the first "
                           "launch left, ns per pair", "milthreads", LANES, lambda p: f"{p} lanes",
                           "ns_per_pair_steady", columns(allocs, floor=True)),
             sweep_section(res, "FIFO buffers per size class, MilThreads 32 lanes, ns/pair "
                           "(XMalloc 2010b Fig. 6)", "milthreads", [32], lambda p: "32 lanes",
                           "ns_per_pair", [(f"{b} buffers", "xmc", f"buf{b}") for b in BUFFERS]
                           + [("allocator default", "xmc", "default")]),
             scaling_section(res, allocs),
             alloc_all_section(res, allocs),
             sweep_section(res, "Fragmentation: fraction of a 256 MiB heap handed out before "
                           "each thread's first NULL (2^20 threads, one run on a fresh heap)\n\n"
                           "Each thread stops at its own first NULL: an allocator that says NULL "
                           "while memory is still free (under contention, or with memory held for "
                           "other sizes) scores low here", "fill", SIZES, size_label, "heap_fraction", cols),
             graph_section(res, allocs),
             problems_section(rows)]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(p for p in parts if p))


# ---- plots ----------------------------------------------------------------------------

def plot(res, allocs, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 3, figsize=(17, 9.5))
    series = [("manymalloc", "xmc", "default")] + [(NAMES.get(a, a), a, "default") for a in allocs if a != "xmc"]

    def line(a, xs, bench, alloc, config, metric, label):
        pts = [(x, res.value(bench, alloc, config, x, metric)) for x in xs]
        pts = [(x, y) for x, y in pts if y is not None]
        if pts:
            a.plot(*zip(*pts), marker="o", label=label, color=COLORS.get(label))

    a = ax[0][0]
    for label, alloc, config in series + [("manymalloc, no coalescing", "xmc", "nocoal")]:
        line(a, LANES, "milthreads", alloc, config, "ns_per_pair", label)
    a.set(title="MilThreads (2^20 pairs of 8 B)", xlabel="active lanes per warp", ylabel="ns per pair",
          yscale="log")
    a.set_xscale("log", base=2)
    a = ax[0][1]
    pts = [(b, res.value("milthreads", "xmc", f"buf{b}", 32, "ns_per_pair")) for b in BUFFERS]
    pts = [(x, y) for x, y in pts if y is not None]
    if pts:
        a.plot(*zip(*pts), marker="o", label="manymalloc, MilThreads 32 lanes", color="C0")
    a.set(title="FIFO buffers per size class (32 lanes)", xlabel="buffers per class",
          ylabel="ns per pair")
    a.set_xscale("log", base=2)
    a = ax[0][2]
    for label, alloc, config in series[:1] + [("manymalloc, no superblocks", "xmc", "nosuper")] + series[1:]:
        one = res.value("scaling", alloc, config, 1, "ns_per_pair")
        pts = [(t, res.value("scaling", alloc, config, t, "ns_per_pair")) for t in THREADS]
        pts = [(t, one / v) for t, v in pts if v and one]
        if pts:
            a.plot(*zip(*pts), marker="o", label=label, color=COLORS.get(label))
    a.set(title="Thread scaling (8 B pairs)", xlabel="threads", ylabel="speedup over 1 thread",
          xscale="log", yscale="log")
    fixed = SIZES[:-1]
    for a, metric, title, ylabel in [(ax[1][0], "alloc_gops", "Alloc-all, 2^20 threads", "G allocations/s"),
                                     (ax[1][1], "free_ms", "Free-all, 2^20 threads", "ms")]:
        for label, alloc, config in series:
            line(a, fixed, "alloc_all", alloc, config, metric, label)
        a.set(title=title, xlabel="block size (bytes)", ylabel=ylabel, yscale="log")
        a.set_xscale("log", base=2)
    a = ax[1][2]
    for label, alloc, config in series:
        line(a, fixed, "fill", alloc, config, "heap_fraction", label)
    a.axhline(0.85, color="grey", linestyle="--", label="goal 0.85")
    a.set(title="Heap usable before the first NULL (256 MiB)", xlabel="block size (bytes)",
          ylabel="fraction", ylim=(0, 1.05))
    a.set_xscale("log", base=2)
    for a in ax.flat:
        if a.lines:
            a.legend(fontsize=8)
        a.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench.png"), dpi=90)


def plot_vs_gallatin(res, out):
    """One bar per cell: ours over Gallatin's speed, fresh and steady, against the 1.5x goal."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = [c[0] for c in GALLATIN_CELLS]
    fig, a = plt.subplots(figsize=(15, 5.5))
    for k, (suffix, name, color) in enumerate([("", "fresh heap", "C0"), ("_steady", "steady state", "C4")]):
        ys = [speedup(res, b, p, m + suffix, lower) or 0 for _, b, p, m, lower in GALLATIN_CELLS]
        a.bar([i + (k - 0.5) * 0.4 for i in range(len(labels))], ys, 0.4, label=name, color=color)
    a.axhline(GALLATIN_GOAL, color="red", linestyle="--", label=f"goal {GALLATIN_GOAL}x")
    a.axhline(1, color="grey", linewidth=0.8)
    a.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=8)
    a.set(ylabel="manymalloc speed / Gallatin speed", yscale="log",
          title="manymalloc against Gallatin, per cell (same GPU, same call)")
    a.legend(fontsize=8)
    a.grid(True, axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "vs_gallatin.png"), dpi=90)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for report.md and bench.png")
    p.add_argument("--note", action="append", default=[], help="a line for the header (repeatable)")
    p.add_argument("csv", nargs="+")
    args = p.parse_args()
    rows, meta, allocs = load(args.csv)
    meta += args.note
    res = Results(rows)
    write_report(res, rows, meta, allocs, args.out)
    plot(res, allocs, args.out)
    if "gallatin" in allocs:
        plot_vs_gallatin(res, args.out)
    with open(os.path.join(args.out, "report.md")) as f:
        print(f.read().split("## MilThreads")[0])


if __name__ == "__main__":
    main()
