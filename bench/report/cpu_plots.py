# SPDX-License-Identifier: Apache-2.0
"""The CPU section's PNG figures; every figure shows all allocators of the
same run side by side, in the same colour for the same allocator everywhere."""
import math

from report import summary
from report.plots import plt, save

COLORS = {"manymalloc": "#d62728", "glibc": "#7f7f7f", "jemalloc": "#1f77b4",
          "tcmalloc": "#2ca02c", "mimalloc": "#ff7f0e", "mimalloc3": "#9467bd"}


def _grid(n):
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.0 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)


def _per_case_lines(med, cases, threads, allocs, value, ylabel, title, path, baseline=None):
    fig, axes = _grid(len(cases))
    for ax, c in zip(axes, cases):
        for a in allocs:
            pts = [(t, value(c, t, a.name)) for t in threads]
            pts = [(t, v) for t, v in pts if v is not None]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=a.name, color=COLORS.get(a.name),
                        linewidth=2.5 if a.name == "manymalloc" else 1.5)
        if baseline is not None:
            ax.axhline(baseline, color="black", linewidth=0.6, linestyle=":")
        ax.set_title(c)
        ax.set_xscale("log", base=2)
        ax.set_xticks(threads, [str(t) for t in threads])
        ax.set_xlabel("threads")
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    save(fig, path)


def time_vs_threads(med, cases, threads, allocs, path):
    def seconds(c, t, a):
        m = med.get((c, t, a))
        return m["seconds"] if m else None
    _per_case_lines(med, cases, threads, allocs, seconds, "median time (s)",
                    "Time vs threads (lower is better)", path)


def speedup_over_glibc(med, cases, threads, allocs, path):
    def speedup(c, t, a):
        m, g = med.get((c, t, a)), med.get((c, t, "glibc"))
        return g["seconds"] / m["seconds"] if m and g and m["seconds"] > 0 else None
    _per_case_lines(med, cases, threads, allocs, speedup, "speedup over glibc",
                    "Speedup over glibc (higher is better)", path, baseline=1.0)


def _grouped_bars(ax, groups, allocs, value):
    width = 0.8 / len(allocs)
    for i, a in enumerate(allocs):
        xs = [g + (i - (len(allocs) - 1) / 2) * width for g in range(len(groups))]
        ys = [value(g, a.name) for g in groups]
        ax.bar(xs, [y if y is not None else 0 for y in ys], width, label=a.name, color=COLORS.get(a.name))
    ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def peak_rss(med, cases, threads, allocs, path):
    top = max(threads)
    fig, ax = plt.subplots(figsize=(max(7, 1.3 * len(cases)), 4))

    def mib(c, a):
        m = med.get((c, top, a))
        return m["rss_kib"] / 1024 if m else None
    _grouped_bars(ax, cases, allocs, mib)
    ax.set_yscale("log")
    ax.set_ylabel("median peak RSS (MiB, log)")
    ax.set_title(f"Peak RSS per case at {top} threads (lower is better)")
    ax.legend(fontsize=8, ncol=len(allocs))
    save(fig, path)


def traces(trace_results, allocs, path):
    one = {(r["trace"], r["allocator"]): r for r in trace_results if r["threads"] == 1 and r.get("trace")}
    names = sorted({t for t, _ in one})
    short = [n.rsplit("/", 1)[-1].removesuffix(".rep") for n in names]
    multi = sorted({r["threads"] for r in trace_results})
    fig, axes = plt.subplots(1, 3, figsize=(max(14, 0.5 * len(names) * 2 + 5), 4.2),
                             gridspec_kw={"width_ratios": [2, 2, 1]})

    def field(key, scale):
        def get(i, a):
            r = one.get((names[i], a))
            return r[key] * scale if r and r.get(key) is not None else None
        return get
    _grouped_bars(axes[0], list(range(len(names))), allocs, field("util", 100))
    axes[0].set_xticks(range(len(names)), short, rotation=45, ha="right", fontsize=7)
    axes[0].set_ylabel("utilization (%)")
    axes[0].set_title("Utilization per trace (higher is better)")
    _grouped_bars(axes[1], list(range(len(names))), allocs, field("kops", 1e-3))
    axes[1].set_xticks(range(len(names)), short, rotation=45, ha="right", fontsize=7)
    axes[1].set_ylabel("Mops/s")
    axes[1].set_title("Throughput per trace, 1 thread")
    for a in allocs:
        pts = [(t, summary.trace_throughput(trace_results, a.name, t)) for t in multi]
        pts = [(t, v / 1e3) for t, v in pts if v]
        if pts:
            axes[2].plot(*zip(*pts), marker="o", label=a.name, color=COLORS.get(a.name))
    axes[2].set_xscale("log", base=2)
    axes[2].set_xticks(multi, [str(t) for t in multi])
    axes[2].set_xlabel("threads")
    axes[2].set_ylabel("aggregate Mops/s")
    axes[2].set_ylim(bottom=0)
    axes[2].set_title("Trace set throughput")
    axes[2].grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    save(fig, path)
