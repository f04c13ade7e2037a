# SPDX-License-Identifier: Apache-2.0
"""The dist report's Delaunay triangulation subsection, from what
dist-delaunay appended to delaunay.jsonl (bench/dist/run_delaunay.py): the
total time against workers with the ideal scaling, as the Myrmics paper's
Fig. 4d, and each phase's time stacked (delaunay.png); a table of the runs
and one of their phases."""

from report.dist_runs import baseline, launched, median_runs
from report.document import Section, table
from report.plots import plt, save


def key(r):
    return (r["mode"], r["points"], r["round_points"])


def load(path):
    """dist-delaunay's runs: each configuration's median run by total_ms.
    Ordered by size and mode, then layout, then workers."""
    return sorted(median_runs(path, key, "total_ms"),
                  key=lambda r: (r["points"], r["mode"], r["round_points"], r["layout"], r["workers"]))


def speedup(runs, r):
    b = baseline(runs, r, key)
    return b["total_ms"] / r["total_ms"] if b and r["total_ms"] > 0 else None


def phase_sum(r, prefix, field="wall_ms"):
    return sum(p[field] for p in r["phases"] if p["name"].startswith(prefix))


def plot(runs, path):
    """Left: total ms against workers, log-log, a line a configuration, the
    ideal (1 worker / workers) dotted (Fig. 4d). Right: each run's phases
    stacked."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 1.4]})
    lines = {}
    for r in runs:
        lines.setdefault(key(r) + (r["layout"],), []).append(r)
    for (mode, points, _, layout), rs in lines.items():
        xs, ys = [r["workers"] for r in rs], [r["total_ms"] for r in rs]
        left.plot(xs, ys, "o-", label=f"{points} points, {mode}, schedulers {layout}")
        base = baseline(runs, rs[0], key)
        if base and layout == "1":
            left.plot(xs, [base["total_ms"] / w for w in xs], ":", color="gray",
                      label="ideal" if not any(l.get_label() == "ideal" for l in left.lines) else None)
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xticks(sorted({r["workers"] for r in runs}))
    left.set_xticklabels([str(w) for w in sorted({r["workers"] for r in runs})])
    left.set_xlabel("workers")
    left.set_ylabel("ms, whole triangulation (median)")
    left.set_title("Delaunay triangulation (Fig. 4d)", fontsize=9)
    left.grid(alpha=0.3, which="both")
    left.legend(fontsize=7)
    order = ["retri right", "retri down", "retri left", "fallback"]
    names = sorted({p["name"] for r in runs for p in r["phases"]},
                   key=lambda n: (0, int(n.split()[1])) if n.startswith("round ") else (1, order.index(n))
                   if n in order else (2, n))
    cmap = plt.get_cmap("tab10")
    xs = range(len(runs))
    bottom = [0.0] * len(runs)
    for i, name in enumerate(names):
        vals = [next((p["wall_ms"] for p in r["phases"] if p["name"] == name), 0.0) for r in runs]
        right.bar(xs, vals, 0.7, bottom=bottom, color=cmap(i % 10), label=name)
        bottom = [b + v for b, v in zip(bottom, vals)]
    right.set_xticks(list(xs))
    right.set_xticklabels([f"{r['workers']}\n({r['layout']}, {r['mode']})\n{r['points']}" for r in runs], fontsize=7)
    right.set_ylabel("ms per phase (median)")
    right.set_title("phases: rounds of 1, 4, 16 workers, the three re-triangulations (Fig. 5), fallback", fontsize=9)
    right.grid(axis="y", alpha=0.3)
    right.legend(fontsize=7)
    save(fig, path)


def check_text(r):
    c = r["check"]
    if not r.get("all_passed", c["passed"]):
        return "**FAILED**: see delaunay.jsonl"
    return (f"ok: {c['triangles']:.0f} = 2n+2 triangles, {c['sampled']:.0f} sampled, "
            f"{c['violations']:.0f} in-circle, {c['bad_links']:.0f} bad links")


def rows(runs):
    out = []
    for r in runs:
        s = speedup(runs, r)
        lo, hi = r["total_ms_range"]
        spread = f" ({r['repeats']}: {lo:.0f}-{hi:.0f})" if r["repeats"] > 1 else ""
        mains = [p for p in r["phases"] if p["name"].startswith("round")]
        fb = next((p for p in r["phases"] if p["name"] == "fallback"), None)
        out.append([r["mode"], r["points"], r["layout"], r["workers"], f"{r['total_ms']:.1f}{spread}",
                    f"{s:.2f}x" if s else "-", f"{phase_sum(r, 'round'):.1f}", f"{phase_sum(r, 'retri'):.1f}",
                    f"{phase_sum(r, 'fallback'):.1f}", f"{sum(p['transfer_ms'] for p in r['phases']):.1f}",
                    f"{sum(p['sched_ms'] for p in r['phases']):.1f} "
                    f"({sum(p.get('sched_calls', 0) for p in r['phases']):.0f})",
                    f"{mains[-1]['postponed']:.0f}", f"{fb['attempted'] if fb else 0:.0f}",
                    f"{sum(p['regions_sent'] for p in r['phases']):.0f}", check_text(r)])
    return out


def phase_rows(runs):
    return [[r["points"], r["mode"], r["layout"], r["workers"], p["name"], p["active"], f"{p['wall_ms']:.1f}",
             f"{p['transfer_ms']:.1f}", f"{p['insert_ms']:.1f}", f"{p['sched_ms']:.1f}", f"{p['attempted']:.0f}",
             f"{p['inserted']:.0f}", f"{p['postponed']:.0f}", f"{p['regions_sent']:.0f}",
             f"{p['triangles_sent']:.0f}", f"{p['triangles_after']:.0f}", f"{p.get('sched_calls', 0):.0f}"]
            for r in runs for p in r["phases"]]


def section(part):
    """The subsection and delaunay.png; None when dist-delaunay did not run."""
    runs = load(part.path("delaunay.jsonl"))
    if not runs:
        return None
    plot(runs, part.path("delaunay.png"))
    r = runs[0]
    lines = [part.heading("Delaunay triangulation (dist-delaunay, the Myrmics paper's Sect. 6.4, Fig. 4d, Fig. 5)"), "",
             "Bowyer-Watson insertion of n uniform points in the unit square inside the frame [-1, 2]^2; 4P cells "
             "(four times the workers) are the leaf regions of a degree-4 region hierarchy, and each triangle "
             "(64 B, one sys_alloc) lives in the cell of its circumcentre. Worker 0 seeds the triangulation "
             f"(round 0: {4 * r['round_points']} points), then each round the owner of a quadrant sys_sends three "
             "of its four sub-quadrant regions to three more workers (rounds of 1, 4, 16 workers); a point whose "
             "walk, cavity or new triangles touch a cell its worker does not own is postponed to the three "
             "re-triangulation phases, whose 2 x 2 blocks of cells are shifted right, down and left (Fig. 5). "
             "Simplified: what is still postponed after them goes to one worker (fallback: every cell sent to "
             "worker 0), and the fourth rotation back is not made. Times: each phase between barriers, median "
             f"over {r['reps']} repetitions in a run; with repeated runs, each configuration's median run. "
             "Check: the last repetition's triangulation gathered on worker 0: 2n + 2 triangles (n points plus "
             "the frame's 4 corners, the hull), mutual links, positive orientation, areas summing to the frame's, "
             "every point a vertex, and no point inside the circumcircle (incircle determinant > 1e-10 x its "
             "permanent) on a sample of the triangles (all when fewer). "
             + launched(), ""]
    lines += table(["mode", "points", "schedulers", "workers", "total ms (runs: range)", "speedup", "rounds",
                    "retri (3)", "fallback", "transfers", "sched wait (requests)", "postponed after main",
                    "points in fallback", "regions sent", "check"], rows(runs), "lrlr" + "r" * 10 + "l")
    lines += ["", part.image("delaunay", "delaunay.png"), "", "Phases:", ""]
    lines += table(["points", "mode", "schedulers", "workers", "phase", "active workers", "wall ms",
                    "transfer ms (slowest)", "insert ms (slowest)", "sched wait ms (mean)", "points tried",
                    "inserted", "postponed (all)", "regions sent", "triangles sent", "triangles after",
                    "sched requests"], phase_rows(runs), "rllrl" + "r" * 12)
    failed = [f"delaunay: {r['points']} points, {r['mode']}, {r['workers']} workers, schedulers {r['layout']}"
              for r in runs if not r["all_passed"]]
    return Section(lines + [""], [], failed)
