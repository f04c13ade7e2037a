#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/dist/report.py: the dist benchmarks' report from what dist-frag,
dist-latency, dist-load and dist-tree wrote into one directory: a plot per
fragmentation run drawn as the Myrmics paper's Fig. 4a-c (frag_<run>.png),
the scheduler's load as workers are added (load.png, as Fig. 4e), one
scheduler against a tree of them (tree.png, as Fig. 4h), and report.md with
their tables and the issue's goals. Prints the tables.

    report.py [--dir DIR]     (default build/bench/dist; read from and written to)
"""
import argparse
import csv
import json
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LATENCY_MODES = [("remote", "MANYMALLOC_DIST_LEASE=0: every call a round trip"),
                 ("local", "default: 64 B objects from leased slabs")]
LATENCY_ROWS = [("sys_alloc(64), one call timed at a time, median", "alloc_median_ns"),
                ("sys_free, one call timed at a time, median", "free_median_ns"),
                ("sys_alloc(64), one call timed at a time, 99th percentile", "alloc_p99_ns"),
                ("sys_free, one call timed at a time, 99th percentile", "free_p99_ns"),
                ("sys_alloc(64), batch, per call", "alloc_batch_ns"),
                ("sys_free, batch, per call", "free_batch_ns"),
                ("sys_balloc(64 B x 1000), per object", "balloc_ns_per_object")]


def load_json(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def load_samples(path):
    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def plot_run(run, samples, path):
    """Requested bytes on the left axis (the paper's dotted grey line), full
    and partial slabs on the right."""
    steps = [s["step"] for s in samples]
    fig, left = plt.subplots(figsize=(6.4, 3.6))
    left.plot(steps, [s["requested_bytes"] / 2**20 for s in samples], color="grey", linestyle=":",
              linewidth=2, label="requested by the program")
    left.set_xlabel("step")
    left.set_ylabel("live bytes requested (MiB)")
    left.set_ylim(bottom=0)
    right = left.twinx()
    for key, color in (("slabs_full", "C0"), ("slabs_partial", "C3")):
        right.plot(steps, [s[key] for s in samples], color=color,
                   label=f"{key[6:]} slabs ({samples[-1][key]:.0f} at the end)")
    right.set_ylabel("slabs")
    right.set_ylim(bottom=0)
    # The requested line in front: in run a it runs right along the full slabs.
    left.set_zorder(right.get_zorder() + 1)
    left.patch.set_visible(False)
    lines = left.get_lines() + right.get_lines()
    left.legend(lines, [l.get_label() for l in lines], fontsize=8, loc="upper left")
    left.set_title(f"run {run['run']}: {run['title']}")
    left.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def frag_table(frag):
    rows = ["| run | workload | steps | live objects | requested MiB | full slabs | partial slabs "
            "| partial/full, max | partial/full, mean |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in frag["runs"]:
        rows.append(f"| {r['run']} | {r['title']} | {r['steps']} | {r['live_objects']} "
                    f"| {r['requested_bytes'] / 2**20:.1f} | {r['slabs_full']} | {r['slabs_partial']} "
                    f"| {100 * r['max_ratio']:.2f}% | {100 * r['mean_ratio']:.2f}% |")
    g = frag["goal"]
    rows += ["", f"The ratios are over the {frag['window']}. Goal, {g['what']}: "
                 f"**{'met' if g['met'] else 'NOT met'}** ({100 * g['value']:.2f}%, limit {100 * g['limit']:.0f}%)."]
    return rows


def latency_table(results):
    modes = [(m, about) for m, about in LATENCY_MODES if results.get(m)]
    rows = ["| ns | " + " | ".join(f"{m} ({about})" for m, about in modes) + " |",
            "|---|" + "---:|" * len(modes)]
    for label, key in LATENCY_ROWS:
        rows.append(f"| {label} | " + " | ".join(f"{results[m][key]:.1f}" for m, _ in modes) + " |")
    rows += ["", "The batch rows are means over back-to-back calls: they include rare long stalls "
                 "that the medians and 99th percentiles leave out.", ""]
    for m, _ in modes:
        for g in results[m]["goals"]:
            rows.append(f"- {m}: {g['what']} <= {g['limit']:.0f} ns: "
                        f"**{'met' if g['met'] else 'NOT met'}** ({g['value']:.1f} ns)")
    return rows


def load_lines(path):
    """dist-load's runs, one a line; the last of each (mode, workers) counts."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        runs = {(r["mode"], r["workers"]): r for r in map(json.loads, f)}
    return [runs[k] for k in sorted(runs)]


def plot_load(runs, path):
    """Calls per second of all workers together, and ns per call, against
    the number of workers, one line a mode."""
    fig, (rate, per) = plt.subplots(1, 2, figsize=(9, 3.6))
    for mode, _ in LATENCY_MODES:
        mine = [r for r in runs if r["mode"] == mode]
        if not mine:
            continue
        workers = [r["workers"] for r in mine]
        rate.plot(workers, [r["calls_per_s"] for r in mine], marker="o", label=mode)
        per.plot(workers, [r["median_ns"] for r in mine], marker="o", label=mode)
    for ax, label in ((rate, "calls per second, all workers"), (per, "ns per call, median worker")):
        ax.set_xlabel("workers calling at once (one scheduler)")
        ax.set_ylabel(label)
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def load_table(runs):
    rows = ["| mode | workers | ns per call, median worker | slowest worker | calls/s, all workers |",
            "|---|---:|---:|---:|---:|"]
    for r in runs:
        rows.append(f"| {r['mode']} | {r['workers']} | {r['median_ns']:.0f} | {r['slowest_ns']:.0f} "
                    f"| {r['calls_per_s']:.3g} |")
    return rows


def tree_lines(path):
    """dist-tree's runs, one a line; the last of each (mode, layout, workers,
    nodes) counts. Ordered by mode as LATENCY_MODES, then by schedulers."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        runs = {(r["mode"], r["layout"], r["workers"], r["nodes"]): r for r in map(json.loads, f)}
    order = {m: i for i, (m, _) in enumerate(LATENCY_MODES)}
    return sorted(runs.values(), key=lambda r: (order.get(r["mode"], 9), r["workers"], r["nodes"], r["schedulers"]))


def tree_baseline(runs, r):
    """The one-scheduler run that r compares with: same mode and size."""
    for b in runs:
        if b["schedulers"] == 1 and (b["mode"], b["workers"], b["nodes"]) == (r["mode"], r["workers"], r["nodes"]):
            return b
    return None


def plot_tree(runs, path):
    """A row a mode (the two differ tenfold and more), a bar a layout: the
    phases' times stacked, the mean worker's wait for scheduler replies in
    the alloc phase, and the messages between schedulers per 1000
    sys_alloc."""
    modes = [m for m, _ in LATENCY_MODES if any(r["mode"] == m for r in runs)]
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
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def tree_table(runs):
    rows = ["| mode | schedulers | workers x nodes | total ms | alloc ms | exchange ms | free ms "
            "| sys_alloc/s, all workers | total vs one scheduler | wait per worker, ms (slowest) "
            "| sched messages / 1000 sys_alloc | forwarded / 1000 | grants |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        base = tree_baseline(runs, r)
        vs = f"{base['total_ms'] / r['total_ms']:.2f}x" if base and r["total_ms"] > 0 else "-"
        rows.append(f"| {r['mode']} | {r['layout']} ({r['schedulers']} in {r['levels']} levels) "
                    f"| {r['workers']} x {r['nodes']} | {r['total_ms']:.1f} | {r['alloc_ms']:.1f} "
                    f"| {r['exchange_ms']:.1f} | {r['free_ms']:.1f} "
                    f"| {'-' if r['allocs_per_s'] is None else format(r['allocs_per_s'], '.3g')} | {vs} "
                    f"| {r['wait_mean_ms']:.1f} ({r['wait_max_ms']:.1f}) "
                    f"| {r['sched_messages_per_1000_allocs']:.2f} | {r['forwarded_per_1000_allocs']:.2f} "
                    f"| {r['grants']:.0f} |")
    return rows


def document(directory, frag, latency, load, figures, tree=()):
    lines = ["# dist: fragmentation and latency", ""]
    if frag:
        lines += ["## Fragmentation (the Myrmics paper's Sect. 6.2, Fig. 4a-c)", "",
                  "One region of mmd_core, serial: each step allocates an object with probability p, "
                  f"else frees a random live object (seed {frag['seed']}, scale {frag['scale']}).", ""]
        lines += frag_table(frag) + [""] + [f"![run {run}]({png})" for run, png in figures] + [""]
    if latency:
        lines += ["## Latency (dist-latency, worker 0 of 1 scheduler + 1 worker)", ""]
        lines += latency_table(latency) + [""]
    else:
        lines += ["## Latency", "", "Not measured (no mpirun or no dist-latency build).", ""]
    if load:
        lines += ["## One scheduler under load (dist-load, as the Myrmics paper's Fig. 4e)", "",
                  "Every worker at once allocates and frees 64 B objects in a region of its own; "
                  "the medians of the repetitions.", ""]
        lines += load_table(load) + ["", "![load](load.png)", ""]
    if tree:
        t = tree[0]
        lines += ["## One scheduler against a tree (dist-tree, as the Myrmics paper's Fig. 4h)", "",
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
        lines += tree_table(tree) + ["", "![tree](tree.png)", ""]
    with open(os.path.join(directory, "report.md"), "w") as f:
        f.write("\n".join(lines))
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", default=os.path.join(REPO, "build", "bench", "dist"),
                   help="where the dist benchmarks wrote; the report goes there too")
    args = p.parse_args()
    frag = load_json(os.path.join(args.dir, "frag.json"))
    figures = []
    for run in frag["runs"] if frag else []:
        png = f"frag_{run['run']}.png"
        plot_run(run, load_samples(os.path.join(args.dir, run["csv"])), os.path.join(args.dir, png))
        figures.append((run["run"], png))
    latency = {m: load_json(os.path.join(args.dir, f"latency_{m}.json")) for m, _ in LATENCY_MODES}
    latency = {m: r for m, r in latency.items() if r}
    load = load_lines(os.path.join(args.dir, "load.jsonl"))
    if load:
        plot_load(load, os.path.join(args.dir, "load.png"))
    tree = tree_lines(os.path.join(args.dir, "tree.jsonl"))
    if tree:
        plot_tree(tree, os.path.join(args.dir, "tree.png"))
    lines = document(args.dir, frag, latency, load, figures, tree)
    import report_nbody   # bench/dist/report_nbody.py: the Barnes-Hut section, where dist-nbody ran
    nbody = report_nbody.section(args.dir)
    if nbody:
        with open(os.path.join(args.dir, "report.md"), "a") as f:
            f.write("\n" + "\n".join(nbody))
        lines += nbody
    import report_delaunay   # bench/dist/report_delaunay.py: the Delaunay section, where dist-delaunay ran
    delaunay = report_delaunay.section(args.dir)
    if delaunay:
        with open(os.path.join(args.dir, "report.md"), "a") as f:
            f.write("\n" + "\n".join(delaunay))
        lines += delaunay
    import report_lists   # bench/dist/report_lists.py: the linked-list exchange, where run_lists.py ran
    lists = report_lists.section(args.dir)
    if lists:
        with open(os.path.join(args.dir, "report.md"), "a") as f:
            f.write("\n" + "\n".join(lists))
        lines += lists
    import report_shards   # bench/dist/report_shards.py: shard migration, where run_shards.py ran
    shards = report_shards.section(args.dir)
    if shards:
        with open(os.path.join(args.dir, "report.md"), "a") as f:
            f.write("\n" + "\n".join(shards))
        lines += shards
    print("\n".join(l for l in lines if not l.startswith("![")))
    print(f"report.py: wrote {args.dir}/report.md and {len(figures)} plots")
    return 0 if frag else 1


if __name__ == "__main__":
    raise SystemExit(main())
