# SPDX-License-Identifier: Apache-2.0
"""The CPU section of report.md, from the results.json bench/run.py wrote:
the machine, the headline figures, the tables and the plots of one run."""
import json
import os

from report import cases, cpu_plots, summary
from report.allocators import Allocator
from report.document import Section, table

RESULTS = "results.json"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _md(head_rows):
    return "\n".join(table(*head_rows))


def _machine_lines(part, info, config, allocs):
    lines = [
        part.heading("Machine", 1),
        "",
        f"- CPU: {info['cpu']}, {info['cores']} cores; kernel {info['kernel']}; {info['date']}",
        f"- Load average (1 min) before the run: {config['loadavg_before']:.2f}, after: {info['loadavg']:.2f} "
        f"(other work on the machine shows up as noise in the times); the run's nice value: {info['nice']}",
    ]
    for a in allocs:
        path = os.path.relpath(a.path, REPO) if a.path.startswith(REPO + "/") else a.path
        lines.append(f"- {a.name}: {a.version} (`{path}`)")
    return lines + [""]


def _case_lines(part, config, allocs, chosen, med, runs):
    names, threads = [c.name for c in chosen], config["threads"]
    noise = summary.spread(runs)
    lines = [part.heading("Workloads", 1), "", f"Sizes of a full run; this one scaled the work by {config['scale']}.", ""]
    lines += [f"- `{c.name}` (`build/{c.program}`): {c.about}" for c in chosen]
    lines += ["", part.heading("Time", 1), "",
              "Median seconds of the timed region; in brackets the peer's time over manymalloc's "
              "(above 1: manymalloc is faster)."
              + (f" Typical deviation of a repetition from its cell's median: {noise * 100:.1f}%"
                 " (median absolute deviation over median, median over the cells)." if noise else ""),
              "",
              _md(summary.time_rows(med, names, threads, allocs)), "",
              part.image("time vs threads", "time_vs_threads.png"), "",
              part.image("speedup over glibc", "speedup_vs_glibc.png"), ""]
    spread_head, spread_rows = summary.thread_cpu_rows(runs, names, threads, allocs)
    if spread_rows:
        lines += [part.heading("Thread speed", 1), "",
                  "The slowest thread's CPU time over the fastest thread's, over the timed region (median over "
                  "the repetitions). The threads of w1-w3, churn and scratch do the same work, so above 1 they "
                  "ran at different speeds: where every allocator shows it, the cores did (other work on the "
                  "machine), and the time of the case, set by its slowest thread, is noisier than its median "
                  "suggests. prodcons's producers and consumers do different work.", "",
                  _md((spread_head, spread_rows)), ""]
    lines += [part.heading("Peak RSS", 1), "",
              "Median peak resident set of the benchmark process (VmHWM, which the program reads at exit; "
              "the kernel's `ru_maxrss` from `wait4` is in results.json too, but includes the harness's own "
              "pages the child holds between fork and exec).", "",
              _md(summary.rss_rows(med, names, threads, allocs)), "",
              part.image("peak RSS", "peak_rss.png"), ""]
    return lines


def _trace_lines(part, allocs, trace_results):
    methods = sorted({(r["allocator"], r["footprint_by"]) for r in trace_results if r.get("footprint_by")})
    lines = [part.heading("Trace set (build/mmdriver)", 1), "",
             "Utilization = peak live bytes / peak footprint growth, footprint measured by: "
             + ", ".join(f"{a} {m}" for a, m in methods) + ".", "",
             _md(summary.trace_rows(trace_results, allocs)), "",
             part.image("traces", "traces.png"), ""]
    failures = [r for r in trace_results if r.get("error")]
    if failures:
        lines += ["Trace runs that failed: "
                  + "; ".join(f"{r['allocator']} -t {r['threads']}: {r['error']}" for r in failures), ""]
    return lines


def _cases_run(runs):
    """The cases of the run, in bench/report/cases.py's order; a case no
    longer there (an older results.json) keeps its name alone."""
    ran = list(dict.fromkeys(r["case"] for r in runs))
    known = {c.name for c in cases.CASES}
    return ([c for c in cases.CASES if c.name in ran]
            + [cases.Case(n, "?", "(not in bench/report/cases.py)") for n in ran if n not in known])


def _draw(part, med, names, threads, allocs, trace_results):
    if names:
        cpu_plots.time_vs_threads(med, names, threads, allocs, part.path("time_vs_threads.png"))
        cpu_plots.speedup_over_glibc(med, names, threads, allocs, part.path("speedup_vs_glibc.png"))
        cpu_plots.peak_rss(med, names, threads, allocs, part.path("peak_rss.png"))
    if trace_results:
        cpu_plots.traces(trace_results, allocs, part.path("traces.png"))


def section(part):
    """The section and its plots; None when bench/run.py wrote nothing there."""
    if not os.path.exists(part.path(RESULTS)):
        return None
    with open(part.path(RESULTS)) as f:
        data = json.load(f)
    config, runs, trace_results = data["config"], data["runs"], data["traces"]
    allocs = [Allocator(**a) for a in data["allocators"]]
    chosen = _cases_run(runs)
    names = [c.name for c in chosen]
    med = summary.medians(runs)
    _draw(part, med, names, config["threads"], allocs, trace_results)
    heads = summary.headlines(med, names, config["threads"], allocs, trace_results)
    lines = [part.heading("CPU (bench/run.py)"), "",
             f"Generated by `bench/run.py` ({config['mode']} run, {config['reps']} repetitions, "
             "medians; allocators interleaved within each repetition"
             + ("; each repetition pinned every allocator to the same CPUs, a window moved on at each repetition"
                if config.get("pinned") else "") + ").", ""]
    lines += _machine_lines(part, data["machine"], config, allocs)
    lines += [part.heading("Headline figures", 1), "",
              "Ratios are manymalloc's figure over the peer's: for time and memory, below 1 is better for manymalloc.", ""]
    lines += [f"- {h}" for h in heads] + [""]
    if chosen:
        lines += _case_lines(part, config, allocs, chosen, med, runs)
    if trace_results:
        lines += _trace_lines(part, allocs, trace_results)
    return Section(lines, [f"- {h.replace('**', '')}" for h in heads])
