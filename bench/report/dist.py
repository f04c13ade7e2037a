# SPDX-License-Identifier: Apache-2.0
"""The dist section of report.md, from what bench/dist/run.py's programs
wrote into the part's folder: fragmentation (frag.json and a CSV a run,
drawn as the Myrmics paper's Fig. 4a-c, frag_<run>.png), call latencies
(latency_<mode>.json), one scheduler under load (load.jsonl, load.png, as
Fig. 4e), then the subsections of the other drivers: the scheduler tree,
Barnes-Hut, Delaunay, the list exchange and shard migration, each where its
results are there."""
import csv
import json
import os

from report import dist_delaunay, dist_lists, dist_nbody, dist_shards, dist_tree
from report.dist_runs import MODES, latest_runs
from report.document import Section, met, table
from report.plots import plt, save

LATENCY_ROWS = [("sys_alloc(64), one call timed at a time, median", "alloc_median_ns"),
                ("sys_free, one call timed at a time, median", "free_median_ns"),
                ("sys_alloc(64), one call timed at a time, 99th percentile", "alloc_p99_ns"),
                ("sys_free, one call timed at a time, 99th percentile", "free_p99_ns"),
                ("sys_alloc(64), batch, per call", "alloc_batch_ns"),
                ("sys_free, batch, per call", "free_batch_ns"),
                ("sys_balloc(64 B x 1000), per object", "balloc_ns_per_object")]
# The other drivers' subsections, in the order the report shows them.
SUBSECTIONS = [dist_tree, dist_nbody, dist_delaunay, dist_lists, dist_shards]


def load_json(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def load_samples(path):
    with open(path) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


# ---------------------------------------------------------------------------
# Fragmentation (Fig. 4a-c)
# ---------------------------------------------------------------------------

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
    save(fig, path)


def frag_lines(part, frag):
    rows = [[r["run"], r["title"], r["steps"], r["live_objects"], f"{r['requested_bytes'] / 2**20:.1f}",
             r["slabs_full"], r["slabs_partial"], f"{100 * r['max_ratio']:.2f}%", f"{100 * r['mean_ratio']:.2f}%"]
            for r in frag["runs"]]
    g = frag["goal"]
    goal = (f"Goal, {g['what']}: {met(g['met'])} ({100 * g['value']:.2f}%, limit {100 * g['limit']:.0f}%).")
    lines = [part.heading("Fragmentation (the Myrmics paper's Sect. 6.2, Fig. 4a-c)", 1), "",
             "One region of mmd_core, serial: each step allocates an object with probability p, "
             f"else frees a random live object (seed {frag['seed']}, scale {frag['scale']}).", ""]
    lines += table(["run", "workload", "steps", "live objects", "requested MiB", "full slabs", "partial slabs",
                    "partial/full, max", "partial/full, mean"], rows, "llrrrrrrr")
    lines += ["", f"The ratios are over the {frag['window']}. {goal}", ""]
    for run in frag["runs"]:
        png = f"frag_{run['run']}.png"
        plot_run(run, load_samples(part.path(run["csv"])), part.path(png))
        lines.append(part.image(f"run {run['run']}", png))
    return lines + [""], [f"- fragmentation: {goal}"]


# ---------------------------------------------------------------------------
# Latency, and one scheduler under load (Fig. 4e)
# ---------------------------------------------------------------------------

def latency_lines(part, results):
    if not results:
        return [part.heading("Latency", 1), "", "Not measured (no mpirun or no dist-latency build).", ""], []
    modes = [(m, about) for m, about in MODES if results.get(m)]
    rows = [[label] + [f"{results[m][key]:.1f}" for m, _ in modes] for label, key in LATENCY_ROWS]
    goals = [f"- {m}: {g['what']} <= {g['limit']:.0f} ns: {met(g['met'])} ({g['value']:.1f} ns)"
             for m, _ in modes for g in results[m]["goals"]]
    lines = [part.heading("Latency (dist-latency, worker 0 of 1 scheduler + 1 worker)", 1), ""]
    lines += table(["ns"] + [f"{m} ({about})" for m, about in modes], rows, "l" + "r" * len(modes))
    lines += ["", "The batch rows are means over back-to-back calls: they include rare long stalls "
                  "that the medians and 99th percentiles leave out.", ""]
    return lines + goals + [""], goals


def load_lines(path):
    """dist-load's runs, one a line; the last of each (mode, workers) counts."""
    return sorted(latest_runs(path, lambda r: (r["mode"], r["workers"])), key=lambda r: (r["mode"], r["workers"]))


def plot_load(runs, path):
    """Calls per second of all workers together, and ns per call, against
    the number of workers, one line a mode."""
    fig, (rate, per) = plt.subplots(1, 2, figsize=(9, 3.6))
    for mode, _ in MODES:
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
    save(fig, path)


def load_section(part, runs):
    plot_load(runs, part.path("load.png"))
    rows = [[r["mode"], r["workers"], f"{r['median_ns']:.0f}", f"{r['slowest_ns']:.0f}", f"{r['calls_per_s']:.3g}"]
            for r in runs]
    return ([part.heading("One scheduler under load (dist-load, as the Myrmics paper's Fig. 4e)", 1), "",
             "Every worker at once allocates and frees 64 B objects in a region of its own; "
             "the medians of the repetitions.", ""]
            + table(["mode", "workers", "ns per call, median worker", "slowest worker", "calls/s, all workers"],
                    rows, "lrrrr")
            + ["", part.image("load", "load.png"), ""])


# ---------------------------------------------------------------------------
# The section
# ---------------------------------------------------------------------------

def section(part):
    """The section and its plots; None when no dist benchmark wrote there."""
    frag = load_json(part.path("frag.json"))
    latency = {m: load_json(part.path(f"latency_{m}.json")) for m, _ in MODES}
    latency = {m: r for m, r in latency.items() if r}
    load = load_lines(part.path("load.jsonl"))
    subsections = [s for s in (m.section(part.under()) for m in SUBSECTIONS) if s]
    if not (frag or latency or load or subsections):
        return None
    lines, checks = [part.heading("dist (bench/dist/run.py)"), ""], []
    if frag:
        more, goal = frag_lines(part, frag)
        lines, checks = lines + more, checks + goal
    if frag or latency:
        more, goals = latency_lines(part, latency)
        lines, checks = lines + more, checks + goals
    if load:
        lines += load_section(part, load)
    for s in subsections:
        lines, checks = lines + s.lines, checks + s.checks
    return Section(lines, checks, [f for s in subsections for f in s.failed])
