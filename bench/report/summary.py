# SPDX-License-Identifier: Apache-2.0
"""Medians, ratios and the headline figures of a run, as text and markdown.

Every ratio here is manymalloc's figure divided by the peer's: for times,
below 1 means manymalloc is faster; for peak RSS, below 1 means it uses less
memory; for utilization and throughput, above 1 means manymalloc is better.
"""
import math
import statistics
from collections import defaultdict

from report.allocators import OURS


def medians(runs):
    """{(case, threads, allocator): {"seconds", "wall", "rss_kib"}}; a cell
    with any failed repetition is None: a median of the survivors would hide
    the failure."""
    groups = defaultdict(list)
    for r in runs:
        groups[(r["case"], r["threads"], r["allocator"])].append(r)
    out = {}
    for key, rs in groups.items():
        if not all(r["ok"] for r in rs):
            out[key] = None
            continue
        out[key] = {k: statistics.median(r[k] for r in rs) for k in ("seconds", "wall", "rss_kib")}
    return out


def spread(runs):
    """The typical noise of a cell: the median over all cells of the median
    absolute deviation of the repetitions' times from their median, relative
    to that median (robust to the odd disturbed repetition, as the medians)."""
    groups = defaultdict(list)
    for r in runs:
        if r["ok"]:
            groups[(r["case"], r["threads"], r["allocator"])].append(r["seconds"])
    rel = []
    for v in groups.values():
        m = statistics.median(v)
        if len(v) > 1 and m > 0:
            rel.append(statistics.median(abs(x - m) for x in v) / m)
    return statistics.median(rel) if rel else None


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def ratio(med, case, threads, peer, metric="seconds"):
    ours, theirs = med.get((case, threads, OURS)), med.get((case, threads, peer))
    if not ours or not theirs or theirs[metric] <= 0:
        return None
    return ours[metric] / theirs[metric]


def fmt_ratio(r, metric="time"):
    if r is None:
        return "n/a"
    if metric == "time":
        return f"{r:.2f} ({(1 - r) * 100:.0f}% less time)" if r <= 1 else f"{r:.2f} ({(r - 1) * 100:.0f}% more time)"
    return f"{r:.2f}"


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

def time_rows(med, cases, threads, allocs):
    """Header and rows: per case and thread count, the median time of each
    allocator and, for the peers, that time over manymalloc's."""
    head = ["case", "threads"] + [a.name for a in allocs]
    rows = []
    for c in cases:
        for t in threads:
            ours = med.get((c, t, OURS))
            row = [c, str(t)]
            for a in allocs:
                m = med.get((c, t, a.name))
                if m is None:
                    row.append("FAILED" if (c, t, a.name) in med else "-")
                elif a.name == OURS or not ours:
                    row.append(f"{m['seconds']:.3f}s")
                else:
                    row.append(f"{m['seconds']:.3f}s ({m['seconds'] / ours['seconds']:.2f})")
            rows.append(row)
    return head, rows


def thread_cpu_rows(runs, cases, threads, allocs):
    """Header and rows: per case and thread count above one, the median over
    the repetitions of the slowest thread's CPU time over the fastest's, for
    the programs that report both (thread_cpu_min/max)."""
    groups = defaultdict(list)
    for r in runs:
        if r["ok"] and r.get("thread_cpu_min"):
            groups[(r["case"], r["threads"], r["allocator"])].append(r["thread_cpu_max"] / r["thread_cpu_min"])
    head = ["case", "threads"] + [a.name for a in allocs]
    rows = []
    for c in cases:
        for t in threads:
            cells = [groups.get((c, t, a.name)) for a in allocs]
            if t > 1 and any(cells):
                rows.append([c, str(t)] + [f"{statistics.median(v):.2f}" if v else "-" for v in cells])
    return head, rows


def rss_rows(med, cases, threads, allocs):
    head = ["case", "threads"] + [f"{a.name} MiB" for a in allocs]
    rows = []
    for c in cases:
        for t in threads:
            cells = [med.get((c, t, a.name)) for a in allocs]
            rows.append([c, str(t)] + [f"{m['rss_kib'] / 1024:.1f}" if m else "-" for m in cells])
    return head, rows


def trace_rows(trace_results, allocs):
    """Single-threaded trace results: per trace, utilization, Kops/s (repeated
    replays) and first-replay Kops/s (each on a fresh heap) of each allocator."""
    by = {(r["trace"], r["allocator"]): r for r in trace_results if r["threads"] == 1 and r.get("trace")}
    names = sorted({r["trace"] for r in trace_results if r.get("trace")})
    head = (["trace"] + [f"{a.name} util" for a in allocs] + [f"{a.name} Kops/s" for a in allocs]
            + [f"{a.name} first Kops/s" for a in allocs])
    rows = []
    for n in names:
        cells = [by.get((n, a.name)) for a in allocs]
        number = lambda r, key: f"{r[key]:.0f}" if r and r.get(key) is not None else "-"
        rows.append([n] + [f"{r['util'] * 100:.1f}%" if r and r.get("util") is not None else "-" for r in cells]
                    + [number(r, "kops") for r in cells] + [number(r, "first_kops") for r in cells])
    return head, rows


def render_text(head, rows):
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


# ---------------------------------------------------------------------------
# Trace aggregates
# ---------------------------------------------------------------------------

def trace_mean_util(trace_results, alloc):
    us = [r["util"] for r in trace_results
          if r["allocator"] == alloc and r["threads"] == 1 and r.get("util") is not None]
    return statistics.mean(us) if us else None


def trace_throughput(trace_results, alloc, threads, key="kops"):
    """malloc-lab's figure: all requests over all replay time, in Kops/s."""
    rs = [r for r in trace_results
          if r["allocator"] == alloc and r["threads"] == threads and r.get(key)]
    if not rs:
        return None
    return sum(r["ops"] * threads for r in rs) / sum(r["ops"] * threads / r[key] for r in rs)


def trace_kops_ratios(trace_results, peer, threads, key="kops"):
    """manymalloc's Kops/s over the peer's, per trace: the aggregate above is
    dominated by the slowest traces, these weigh every trace alike."""
    kops = {(r["trace"], r["allocator"]): r[key] for r in trace_results
            if r["threads"] == threads and r.get(key)}
    return [kops[(t, OURS)] / kops[(t, p)] for (t, p) in kops if p == peer and (t, OURS) in kops]


# ---------------------------------------------------------------------------
# Headline figures
# ---------------------------------------------------------------------------

def headlines(med, cases, threads, allocs, trace_results):
    """The figures the allocator is tuned against, as markdown bullets."""
    names = {a.name for a in allocs}
    top = max(threads)
    out = []

    def geo_time(peer, t):
        return geomean(ratio(med, c, t, peer) for c in cases)

    for peer in ("mimalloc", "mimalloc3", "glibc"):
        if peer in names and cases:
            out.append(f"Time at {top} threads, geometric mean over the bench set, manymalloc / {peer}: "
                       f"**{fmt_ratio(geo_time(peer, top))}**")
    for peer in ("mimalloc", "mimalloc3"):
        for t in (1, 2):
            if peer in names and cases and t in threads:
                out.append(f"Time at {t} thread{'s' if t > 1 else ''}, geometric mean, manymalloc / {peer}: "
                           f"**{fmt_ratio(geo_time(peer, t))}**")
    if "tcmalloc" in names:
        for w in ("w1", "w2", "w3"):
            if w in cases:
                cells = ", ".join(f"{t}T {fmt_ratio(ratio(med, w, t, 'tcmalloc'))}" for t in threads)
                out.append(f"{w.upper()} time, manymalloc / tcmalloc: {cells}")
    if trace_results:
        ours_u, glibc_u = trace_mean_util(trace_results, OURS), trace_mean_util(trace_results, "glibc")
        if ours_u is not None and glibc_u is not None:
            out.append(f"Trace set mean utilization: manymalloc **{ours_u * 100:.1f}%** vs glibc {glibc_u * 100:.1f}%")
        for t in sorted({r["threads"] for r in trace_results}):
            ours_k, mi_k = trace_throughput(trace_results, OURS, t), trace_throughput(trace_results, "mimalloc", t)
            if ours_k and mi_k:
                per_trace = geomean(trace_kops_ratios(trace_results, "mimalloc", t))
                out.append(f"Trace set throughput at {t} thread{'s' if t > 1 else ''}: manymalloc {ours_k:.0f} Kops/s "
                           f"vs mimalloc {mi_k:.0f} Kops/s (ratio **{ours_k / mi_k:.2f}**; "
                           f"geometric mean of per-trace ratios {per_trace:.2f})")
            ours_f = trace_throughput(trace_results, OURS, t, "first_kops")
            mi_f = trace_throughput(trace_results, "mimalloc", t, "first_kops")
            if ours_f and mi_f:
                per_trace = geomean(trace_kops_ratios(trace_results, "mimalloc", t, "first_kops"))
                out.append(f"Trace set first-replay throughput (fresh heap) at {t} thread{'s' if t > 1 else ''}: "
                           f"manymalloc {ours_f:.0f} Kops/s vs mimalloc {mi_f:.0f} Kops/s (ratio **{ours_f / mi_f:.2f}**; "
                           f"geometric mean of per-trace ratios {per_trace:.2f})")
    for peer in ("mimalloc", "mimalloc3"):
        rss = {(c, t): ratio(med, c, t, peer, "rss_kib") for c in cases for t in threads} if peer in names else {}
        rss = {k: v for k, v in rss.items() if v is not None}
        if rss:
            worst = max(rss, key=rss.get)
            out.append(f"Peak RSS, manymalloc / {peer} over the bench set: geometric mean **{geomean(rss.values()):.2f}**, "
                       f"max **{rss[worst]:.2f}** ({worst[0]} at {worst[1]}T)")
    if cases:
        out += losses(med, cases, threads, allocs)
    return out


def losses(med, cases, threads, allocs):
    """Where manymalloc is slower than the fastest peer by more than 10%."""
    out = []
    for c in cases:
        for t in threads:
            peers = [(ratio(med, c, t, a.name), a.name) for a in allocs if a.name != OURS]
            peers = [p for p in peers if p[0] is not None]
            if med.get((c, t, OURS)) is None and (c, t, OURS) in med:
                out.append(f"{c} at {t}T: manymalloc FAILED")
            elif peers and max(peers)[0] > 1.10:
                r, name = max(peers)
                out.append(f"{c} at {t}T: manymalloc takes {r:.2f}x the time of {name}")
    return ["Losses (more than 10% slower than the fastest peer): " + ("; ".join(out) if out else "none")]
