# SPDX-License-Identifier: Apache-2.0
"""The GPU section's PNG figures: bench.png (every benchmark against the
other allocators) and vs_gallatin.png (ours over Gallatin's speed, cell by
cell)."""
from report.gpu_results import (BUFFERS, COLORS, GALLATIN_CELLS, GALLATIN_GOAL, LANES, NAMES, SIZES, THREADS,
                                speedup)
from report.plots import plt, save


def overview(res, allocs, path):
    """bench.png: a panel a benchmark, every allocator and ablation in the same colour everywhere."""
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
    save(fig, path, dpi=90)


def vs_gallatin(res, path):
    """One bar per cell: ours over Gallatin's speed, fresh and steady, against the 1.5x goal."""
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
    save(fig, path, dpi=90)
