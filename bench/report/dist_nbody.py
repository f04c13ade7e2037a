# SPDX-License-Identifier: Apache-2.0
"""The dist report's Barnes-Hut N-body subsection, from what dist-nbody
appended to nbody.jsonl (bench/dist/run_nbody.py): the time of the
mean worker per step, stacked as computation, worker communication and
scheduler communication, as the Myrmics paper's Fig. 4e (one scheduler) and
Fig. 4f (a tree of schedulers), in nbody.png; a table; and the issue's
goals (8 workers >= 5x faster than one; scheduler communication under 5% of
a worker's time)."""

from report.dist_runs import baseline, launched, median_runs
from report.document import Section, met, table
from report.plots import plt, save

SPEEDUP_WORKERS, SPEEDUP_GOAL = 8, 5.0   # the figures
SCHED_GOAL = 0.05
PARTS = [("comp_ms", "computation", "C0"), ("wcomm_ms", "worker comm", "C1"), ("sched_ms", "sched comm", "C3")]


def key(r):
    return (r["mode"], r["bodies"], r["steps"], r["theta"], r["alloc"], r.get("cost", "interactions"))


def load(path):
    """dist-nbody's runs: each configuration's median run by ms per step,
    with the fastest single step of any of its runs ("fastest_step_ms").
    Ordered by size and mode, then workers, then schedulers."""
    def fastest(r, rs):
        r["fastest_step_ms"] = min(min(x.get("step_ms_each") or [x["step_ms"]]) for x in rs)
    return sorted(median_runs(path, key, "step_ms", fastest),
                  key=lambda r: (r["bodies"], r["mode"], r["steps"], r["theta"], r["alloc"], r["workers"],
                                 r["schedulers"], r["layout"]))


def speedup(runs, r, field="step_ms"):
    """Against the baseline: by the median runs' ms per step, or with
    field "fastest_step_ms" by the fastest single step of any run."""
    b = baseline(runs, r, key)
    return b[field] / r[field] if b and r[field] > 0 else None


def groups(runs):
    out = {}
    for r in runs:
        out.setdefault(key(r), []).append(r)
    return list(out.values())


def plot(runs, path):
    """A row a size and mode; left: one scheduler against workers (Fig. 4e),
    right: every layout (Fig. 4f). Bars: the mean worker's ms per step,
    stacked; a dot: the 1-worker time / workers (ideal)."""
    rows = groups(runs)
    fig, axes = plt.subplots(len(rows), 2, figsize=(12, 3.8 * len(rows)), squeeze=False,
                             gridspec_kw={"width_ratios": [1, 1.6]})
    for (one, tree), mine in zip(axes, rows):
        for ax, sel in ((one, [r for r in mine if r["layout"] == "1"]), (tree, mine)):
            xs = range(len(sel))
            bottom = [0.0] * len(sel)
            for field, label, color in PARTS:
                vals = [r[field] for r in sel]
                ax.bar(xs, vals, 0.7, bottom=bottom, color=color, label=label)
                bottom = [b + v for b, v in zip(bottom, vals)]
            base = baseline(runs, sel[0], key) if sel else None
            if base:
                ax.plot(xs, [base["step_ms"] / r["workers"] for r in sel], "k.", label="1 worker / workers")
            for x, r in zip(xs, sel):
                s = speedup(runs, r)
                if s and r["workers"] > 1:
                    ax.annotate(f"{s:.1f}x", (x, bottom[x]), ha="center", va="bottom", fontsize=7)
            ax.set_xticks(list(xs))
            ax.set_xticklabels([f"{r['workers']}" + ("" if ax is one else f"\n({r['layout']})") for r in sel],
                               fontsize=8)
            ax.set_xlabel("workers" + ("" if ax is one else " (MANYMALLOC_SCHEDULERS)"))
            ax.set_ylabel("ms per step, mean worker")
            ax.grid(axis="y", alpha=0.3)
            ax.legend(fontsize=7)
        r = mine[0]
        one.set_title(f"one scheduler (Fig. 4e): {r['bodies']} bodies, {r['mode']}", fontsize=9)
        tree.set_title(f"one scheduler and trees (Fig. 4f): theta {r['theta']}, {r['steps']} steps, "
                       f"{r['alloc']}", fontsize=9)
    save(fig, path)


def check_text(r):
    c = r["check"]
    if not r.get("all_passed", c["passed"]):
        return "**FAILED** in a repeat: see nbody.jsonl"
    pos = (f"pos {c['pos_err_rms']:.1e}/{c['pos_err_max']:.1e} vs {c['against']}" if c["compared"]
           else "pos not compared")
    return (f"{'ok' if c['passed'] else '**FAILED**'}: acc {c['acc_err_mean']:.1e}/{c['acc_err_max']:.1e}, "
            f"{pos}, {c['violations']:.0f} viol.")


def rows(runs):
    out = []
    for r in runs:
        s, f = speedup(runs, r), speedup(runs, r, "fastest_step_ms")
        lo, hi = r.get("step_ms_range", (r["step_ms"], r["step_ms"]))
        spread = f" ({r['repeats']}: {lo:.0f}-{hi:.0f})" if r.get("repeats", 1) > 1 else ""
        out.append([r["mode"], r["bodies"], r["layout"], r["workers"], f"{r['step_ms']:.1f}{spread}",
                    f"{s:.2f}x ({f:.2f}x)" if s else "-", f"{r['comp_ms']:.1f}", f"{r['wcomm_ms']:.1f}",
                    f"{r['sched_ms']:.2f}", f"{100 * r['sched_frac']:.2f}% ({100 * r['sched_frac_max']:.2f}%)",
                    f"{r['force_imbalance']:.2f}", f"{r['levels_sent']:.1f} / {r['tree_levels']:.1f}",
                    f"{r['sent_mib_per_step']:.1f}", f"{r['interactions_per_body']:.0f}",
                    f"{r['sched_calls_per_step']:.0f}", check_text(r)])
    return out


def goals(runs):
    lines = []
    for mine in groups(runs):
        at = [r for r in mine if r["workers"] == SPEEDUP_WORKERS]
        r0 = mine[0]
        what = f"{r0['bodies']} bodies, {r0['mode']}"
        for r in at:
            s, fast = speedup(runs, r), speedup(runs, r, "fastest_step_ms")
            if s is not None:
                lines.append(f"- {what}, {SPEEDUP_WORKERS} workers, schedulers {r['layout']}: >= {SPEEDUP_GOAL:.0f}x "
                             f"faster than one worker: {met(s >= SPEEDUP_GOAL)} ({s:.2f}x "
                             f"by the median runs; {fast:.2f}x by the fastest steps)")
            lines.append(f"- {what}, {SPEEDUP_WORKERS} workers, schedulers {r['layout']}: scheduler communication "
                         f"< {100 * SCHED_GOAL:.0f}% of every worker's time: "
                         f"{met(r['sched_frac_max'] < SCHED_GOAL)} "
                         f"({100 * r['sched_frac_max']:.2f}% the most, {100 * r['sched_frac']:.2f}% the mean)")
        if not at:
            lines.append(f"- {what}: no run with {SPEEDUP_WORKERS} workers, so the issue's figures are not measured")
    return lines


def section(part):
    """The subsection and nbody.png; None when dist-nbody did not run."""
    runs = load(part.path("nbody.jsonl"))
    if not runs:
        return None
    plot(runs, part.path("nbody.png"))
    r = runs[0]
    lines = [part.heading("Barnes-Hut N-body (dist-nbody, the Myrmics paper's Sect. 6.3, Fig. 4e-f)"), "",
             "A Plummer sphere; each step every worker builds its octree with one region per level (cells by "
             f"{'one sys_balloc a level' if r['alloc'] == 'balloc' else 'one sys_alloc each'}), sends every other "
             "worker the levels its bounding box can open (sys_send of those regions, the root as the object), "
             "grafts the trees it receives as they arrived, computes forces (Barnes-Hut, theta "
             f"{r['theta']}, leaves of up to {r['leaf']} bodies), moves its bodies and rebalances them by "
             "recursive bisection on the last step's "
             + {"interactions": "interaction counts", "visits": "interactions and cells visited",
                "time": "force walk times"}[r.get("cost", "interactions")]
             + " (MPI over sys_worker_comm). "
             f"{r['warmup']} untimed step(s), then {r['steps']} timed; the bars are the mean worker's ms per "
             "step: scheduler communication is its worker_wait_ns (sys_sched_stats), worker communication the "
             "time in sys_send, sys_recv and MPI calls less the scheduler wait inside them (which includes "
             "waiting for slower workers), computation the rest. Speedup: against the 1-worker run with one "
             "scheduler; with repeats, each configuration's median run by ms per step; in parentheses the "
             "ratio of the fastest single steps (of any run of the configuration), less sensitive to a host "
             "whose cores slow down for seconds at a time. Checks: acc = first-step accelerations against direct sums on a sample, relative error "
             "mean/max; pos = final positions against the serial run of the same steps (serial: worker 0 "
             "alone; file: the 1-worker run), |dx| rms/max over bodies relative to the rms displacement; "
             "viol. = cells opened whose children were not sent (must be 0). "
             + launched(), ""]
    lines += table(["mode", "bodies", "schedulers", "workers", "ms/step (runs: range)", "speedup (fastest steps)",
                    "computation", "worker comm", "sched comm", "sched share, mean (max)", "force imbalance",
                    "levels sent / of", "MiB sent/step", "interactions/body", "sched calls/step",
                    "check (rel. err. mean/max)"], rows(runs), "lrlr" + "r" * 11 + "l")
    checks = goals(runs)
    failed = [f"nbody: {r['bodies']} bodies, {r['mode']}, {r['workers']} workers, schedulers {r['layout']}"
              for r in runs if not r["all_passed"]]
    return Section(lines + ["", part.image("nbody", "nbody.png"), ""] + checks + [""], checks, failed)
