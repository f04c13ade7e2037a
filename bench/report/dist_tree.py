# SPDX-License-Identifier: Apache-2.0
"""The dist report's subsection on one scheduler against a tree of them
(dist-tree, as the Myrmics paper's Fig. 4h), from tree.jsonl: a table and
tree.png."""
import os

from report.dist_runs import MODES, latest_runs
from report.document import Section, table
from report.plots import plt, save


def load(path):
    """dist-tree's runs, one a line; the last of each (mode, layout, workers,
    nodes) counts. Ordered by mode as MODES, then by schedulers."""
    runs = latest_runs(path, lambda r: (r["mode"], r["layout"], r["workers"], r["nodes"]))
    order = {m: i for i, (m, _) in enumerate(MODES)}
    return sorted(runs, key=lambda r: (order.get(r["mode"], 9), r["workers"], r["nodes"], r["schedulers"]))


def baseline(runs, r):
    """The one-scheduler run that r compares with: same mode and size."""
    for b in runs:
        if b["schedulers"] == 1 and (b["mode"], b["workers"], b["nodes"]) == (r["mode"], r["workers"], r["nodes"]):
            return b
    return None


def plot(runs, path):
    """A row a mode (the two differ tenfold and more), a bar a layout: the
    phases' times stacked, the mean worker's wait for scheduler replies in
    the alloc phase, and the messages between schedulers per 1000
    sys_alloc."""
    modes = [m for m, _ in MODES if any(r["mode"] == m for r in runs)]
    layouts = sorted({(r["schedulers"], r["layout"]) for r in runs})
    color_of = {layout: f"C{i}" for i, (_, layout) in enumerate(layouts)}
    fig, axes = plt.subplots(len(modes), 3, figsize=(12, 3.2 * len(modes)), squeeze=False)
    for (time_ax, wait_ax, msg_ax), mode in zip(axes, modes):
        mine = [r for r in runs if r["mode"] == mode]
        xs = range(len(mine))
        names = [r["layout"] for r in mine]
        colors = [color_of[r["layout"]] for r in mine]
        bottom = [0.0] * len(mine)
        for key, hatch in (("alloc_ms", None), ("exchange_ms", "//"), ("free_ms", "..")):
            vals = [r[key] for r in mine]
            time_ax.bar(xs, vals, 0.6, bottom=bottom, color=colors, hatch=hatch, edgecolor="white")
            bottom = [b + v for b, v in zip(bottom, vals)]
        wait_ax.bar(xs, [r["wait_mean_ms"] for r in mine], 0.6, color=colors,
                    yerr=[[0] * len(mine), [r["wait_max_ms"] - r["wait_mean_ms"] for r in mine]], capsize=3)
        msg_ax.bar(xs, [r["sched_messages_per_1000_allocs"] for r in mine], 0.6, color=colors)
        w = mine[0]
        for ax, label in ((time_ax, "ms: alloc, exchange (//), free (..)"),
                          (wait_ax, "ms waited, alloc phase:\nmean worker (whisker: slowest)"),
                          (msg_ax, "scheduler-to-scheduler messages\nper 1000 sys_alloc")):
            ax.set_xticks(list(xs))
            ax.set_xticklabels(names)
            ax.set_xlabel("MANYMALLOC_SCHEDULERS")
            ax.set_ylabel(label, fontsize=8)
            ax.grid(axis="y", alpha=0.3)
        time_ax.set_title(f"{mode}: {w['workers']} workers x {w['nodes']} nodes of {w['node_size']} B", fontsize=9)
    save(fig, path)


def rows(runs):
    out = []
    for r in runs:
        base = baseline(runs, r)
        vs = f"{base['total_ms'] / r['total_ms']:.2f}x" if base and r["total_ms"] > 0 else "-"
        out.append([r["mode"], f"{r['layout']} ({r['schedulers']} in {r['levels']} levels)",
                    f"{r['workers']} x {r['nodes']}", f"{r['total_ms']:.1f}", f"{r['alloc_ms']:.1f}",
                    f"{r['exchange_ms']:.1f}", f"{r['free_ms']:.1f}",
                    "-" if r["allocs_per_s"] is None else format(r["allocs_per_s"], ".3g"), vs,
                    f"{r['wait_mean_ms']:.1f} ({r['wait_max_ms']:.1f})",
                    f"{r['sched_messages_per_1000_allocs']:.2f}", f"{r['forwarded_per_1000_allocs']:.2f}",
                    f"{r['grants']:.0f}"])
    return out


def section(part):
    """The subsection and tree.png; None when dist-tree did not run."""
    runs = load(part.path("tree.jsonl"))
    if not runs:
        return None
    plot(runs, part.path("tree.png"))
    t = runs[0]
    lines = [part.heading("One scheduler against a tree (dist-tree, as the Myrmics paper's Fig. 4h)"), "",
             "Every worker builds a list of nodes, one sys_alloc a node, in a region of its own "
             f"(on its leaf scheduler), passes it on around a ring for {t['stages']} stage(s) "
             "(sys_send / sys_recv; the receiver walks it and checks its checksum), then frees its "
             "region; barriers between the phases, the medians of "
             f"{t['reps']} repetitions. remote: MANYMALLOC_DIST_LEASE=0, every sys_alloc a round "
             "trip to the leaf scheduler; local: the default leases. The wait is each worker's "
             "worker_wait_ns over its alloc phase, the counters sys_sched_stats' across it; the "
             "alloc phase's time, wait and counters are net of an empty phase of the same shape "
             "(its barriers and stats queries). mpirun --oversubscribe, on a host of "
             f"{os.cpu_count()} cores.", ""]
    lines += table(["mode", "schedulers", "workers x nodes", "total ms", "alloc ms", "exchange ms", "free ms",
                    "sys_alloc/s, all workers", "total vs one scheduler", "wait per worker, ms (slowest)",
                    "sched messages / 1000 sys_alloc", "forwarded / 1000", "grants"], rows(runs), "lll" + "r" * 10)
    return Section(lines + ["", part.image("tree", "tree.png"), ""])
