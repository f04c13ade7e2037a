# SPDX-License-Identifier: Apache-2.0
"""The GPU section of report.md, from the CSV files of the part's folder
(scripts/gpu-check's results.csv first, then any other allocator's results
on the same cases beside it, merged in as extra columns): ours and CUDA's
malloc beside the goals of the issues, and the plots (bench.png, and
vs_gallatin.png where Gallatin's results are there)."""
import glob
import os

from report import gpu_plots
from report.document import Section, table
from report.gpu_results import (BUFFERS, GALLATIN_CELLS, GALLATIN_GOAL, GOALS, LANES, NAMES, SIZES, THREADS,
                                Results, fmt, load, size_label, speedup)

RESULTS = "results.csv"


def md(header, body):
    return "\n".join(table(header, body)) + "\n"


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


def goals_section(part, res, allocs):
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
    return part.heading("Goals of the issue", 1) + "\n\n" + md(header, body)


def gallatin_section(part, res):
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
    return (part.heading("Against Gallatin, cell by cell", 1) + "\n\nSpeed ratio: Gallatin's time over ours (ns, ms) or our "
            "rate over Gallatin's (G/s). 'steady': the same kernel run again on the heap the first run "
            "left, without re-initializing it (what a long-running code sees).\n\n"
            + md(header, body))


def graph_section(part, res, allocs):
    cols = [a for a in ["xmc"] + allocs if a not in ("floor",)]
    cols = list(dict.fromkeys(cols))
    metrics = [("insert_medges", "inserts M edges/s"), ("delete_medges", "deletes M edges/s"),
               ("held_mib_inserted", "heap held after inserts MiB"),
               ("held_mib_deleted", "heap held after deletes MiB"),
               ("arrays_mib_inserted", "arrays after inserts MiB"),
               ("arrays_mib_deleted", "arrays after deletes MiB")]
    body = [[NAMES.get(a, a)] + [res.cell("graph", a, "default", 0, m) for m, _ in metrics] for a in cols]
    return (part.heading("Dynamic graph", 1) + "\n\n2^20 vertices, each with an adjacency array on the heap; 2^24 edges "
            "inserted in 16 batches (sources skewed: the top vertex gets about 1/1024 of the edges), "
            "one thread per vertex of a batch growing its array by allocate-copy-free to the next "
            "power of two; then three edges in four deleted in 16 batches, arrays shrunk to twice their "
            "size when a quarter full and freed when empty. Checked against a host model after each "
            "phase of the first run. 'arrays': the bytes of the arrays the vertices hold (the same for "
            "every allocator); 'heap held': the allocator's own count of bytes in use, where it keeps "
            "one.\n\n" + md(["allocator"] + [h for _, h in metrics], body))


# ---- the per-benchmark tables ------------------------------------------------------

def columns(allocs, extra=(), floor=False):
    """(header, alloc, config) for each column: ours first, then the others;
    the kernel without an allocator only where asked (it runs MilThreads only)."""
    cols = [("manymalloc", "xmc", "default")] + list(extra)
    cols += [(NAMES.get(a, a), a, "default") for a in allocs if a != "xmc" and (floor or a != "floor")]
    return cols


def sweep_section(part, res, title, bench, params, label, metric, cols):
    """A table of one metric over params; nothing when no case of it ran."""
    body = [[label(p)] + [res.cell(bench, a, c, p, metric) for _, a, c in cols] for p in params]
    if not any(cell for line in body for cell in line[1:]):
        return ""
    return part.heading(title, 1) + "\n\n" + md([""] + [h for h, _, _ in cols], body)


def scaling_section(part, res, allocs):
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
    return (part.heading("Thread scaling (XMalloc 2010, Fig. 8)", 1) + "\n\n8-byte pairs, up to 1024 per thread "
            "and 2^20 in all; speedup over one thread.\n\n" + md(header, body))


def alloc_all_section(part, res, allocs):
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
    return (part.heading("Alloc-all / free-all, 2^20 threads", 1) + "\n\nOne block per thread (G allocations/s for the "
            "allocating kernel, ms for the freeing kernel, which only frees: every block is read back "
            "in an untimed kernel between the two); the last row has lane 0 of each warp "
            "allocate 32 x 64 B for its warp, counted per thread.\n\n" + md(header, body + [warp])
            + "\n" + part.heading("Steady state: the same alloc-all and free-all run again on the heap the first "
                                   "pair left", 2) + "\n\n" + md(header, steady)
            + "\n" + part.heading("Churn: 10 rounds in which every thread frees its block and allocates one of "
                                   "another size (mixed 16 B..4 KiB), G free+alloc pairs/s; then 10 more (steady)", 2)
            + "\n\n" + md(["allocator", "G pairs/s", "G pairs/s steady"], churn))


def problems_section(part, rows):
    bad = [r for r in rows.values() if r["status"] in ("failed", "timeout")
           or int(r["bad"]) or (r["bench"] != "fill" and int(r["nulls"]))]
    if not bad:
        return part.heading("Problems", 1) + "\n\nNone: every case finished, no NULL where memory was left, every block read back.\n"
    body = [[r["bench"], r["alloc"], r["config"], r["param"], r["status"], r["nulls"], r["bad"],
             r["note"]] for r in bad]
    return part.heading("Problems", 1) + "\n\n" + md(["bench", "alloc", "config", "param", "status", "NULLs", "bad",
                                      "note"], body)


def _text(part, res, rows, meta, allocs):
    cols = columns(allocs)
    parts = [part.heading("GPU (scripts/gpu-check)") + "\n\n" + "".join(f"- {m}\n" for m in meta),
             "Every figure is the median of 5 timed runs after a warm-up (CUDA events around each "
             "kernel; the heap re-initialized or fully freed between runs). '(n runs)': a slow case "
             "got fewer runs within its time cap; 'failed'/'timeout': the case's child process died "
             "or ran out of time. Written by bench/report/main.py from results.csv.\n",
             goals_section(part, res, allocs)]
    if "gallatin" in allocs:
        parts.append(gallatin_section(part, res))
    parts += [
             sweep_section(part, res, "MilThreads, ns per 8-byte alloc+free pair (XMalloc 2010 Fig. 2; "
                           "XMalloc 2010b Fig. 2, 5)\n\n2^20 pairs in every row: L active lanes "
                           "per warp means 2^20 x 32/L threads launched, lanes L..31 idle",
                           "milthreads", LANES, lambda p: f"{p} lanes",
                           "ns_per_pair", columns(allocs, [("manymalloc, no coalescing", "xmc", "nocoal")], floor=True)),
             sweep_section(part, res, "MilThreads, steady state: the kernel run again on the heap the first "
                           "launch left, ns per pair", "milthreads", LANES, lambda p: f"{p} lanes",
                           "ns_per_pair_steady", columns(allocs, floor=True)),
             sweep_section(part, res, "FIFO buffers per size class, MilThreads 32 lanes, ns/pair "
                           "(XMalloc 2010b Fig. 6)", "milthreads", [32], lambda p: "32 lanes",
                           "ns_per_pair", [(f"{b} buffers", "xmc", f"buf{b}") for b in BUFFERS]
                           + [("allocator default", "xmc", "default")]),
             scaling_section(part, res, allocs),
             alloc_all_section(part, res, allocs),
             sweep_section(part, res, "Fragmentation: fraction of a 256 MiB heap handed out before "
                           "each thread's first NULL (2^20 threads, one run on a fresh heap)\n\n"
                           "Each thread stops at its own first NULL: an allocator that says NULL "
                           "while memory is still free (under contention, or with memory held for "
                           "other sizes) scores low here", "fill", SIZES, size_label, "heap_fraction", cols),
             graph_section(part, res, allocs),
             problems_section(part, rows)]
    return "\n".join(p for p in parts if p)


def section(part):
    """The section and its plots; None when there is no results.csv."""
    if not os.path.exists(part.path(RESULTS)):
        return None
    others = sorted(p for p in glob.glob(part.path("*.csv")) if os.path.basename(p) != RESULTS)
    rows, meta, allocs = load([part.path(RESULTS)] + others)
    res = Results(rows)
    gpu_plots.overview(res, allocs, part.path("bench.png"))
    lines = _text(part, res, rows, meta, allocs).split("\n")
    images = [part.image("GPU benchmarks", "bench.png")]
    judged = goals_section(part, res, allocs)
    if "gallatin" in allocs:
        gpu_plots.vs_gallatin(res, part.path("vs_gallatin.png"))
        images.append(part.image("against Gallatin", "vs_gallatin.png"))
        judged += gallatin_section(part, res)
    return Section(lines + [""] + images + [""], [l for l in judged.split("\n") if l.startswith("|")])
