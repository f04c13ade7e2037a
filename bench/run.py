#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the CPU benchmarks on manymalloc and its peers and writes the report.

    python3 bench/run.py [--quick] [--threads 1,2,4] [--reps N] [--scale F] [--only REGEX]
                         [--out DIR] [--build DIR] [--peer-dir DIR] [--max-threads N] [--pin]

Every case (bench/report/cases.py) and the mmdriver trace set run on every
allocator found (manymalloc, glibc, jemalloc, tcmalloc, mimalloc 2.0.9 from Debian,
mimalloc3: 3.4.3 from PyPI, see scripts/install-deps) in the same
invocation, allocators interleaved within each repetition so that drift of
the machine hits all of them alike. With --pin, each repetition runs every
allocator on the same CPUs (a window of as many CPUs as threads, moved on at
each repetition): on a host whose cores run at different speeds, unpinned
runs compare the cores that each allocator's processes landed on. Prints a table of median times and
writes results.json to OUT/cpu (--out, default BUILD/bench, outside the tracked tree).
Then, without --only, the dist benchmarks run (bench/dist/run.py: the Myrmics
paper's experiments on the distributed region allocator, into OUT/dist) and,
where `nvidia-smi -L` finds a GPU, the GPU benchmarks (scripts/gpu-check,
into OUT/gpu). Last, bench/report/main.py writes OUT/report.md, a section a
part with its plots, and prints the issues' figures.

--smoke (the bench.smoke CTest) runs each program once, tiny, on manymalloc
only, checking its exit status and that malloc came from libmanymalloc.so.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)

from report import allocators, cases, runner, summary, traces  # noqa: E402

# mode: (work scale, repetitions, mmdriver timed replays); odd replay counts,
# so that a trace's median is one replay's time, not the mean of an outlier and another
MODES = {"full": (1.0, 5, 5), "quick": (0.1, 3, 3), "smoke": (0.01, 1, 0)}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="a tenth of the work, 3 repetitions (under 2 minutes)")
    mode.add_argument("--smoke", action="store_true", help="each program once, tiny, on manymalloc only; no report")
    p.add_argument("--threads", help="comma-separated thread counts (default: powers of two up to "
                                     "--max-threads, then twice that to show oversubscription)")
    p.add_argument("--max-threads", type=int, default=os.cpu_count(), help="default: the number of cores")
    p.add_argument("--reps", type=int, help="repetitions per case (default 5, --quick 3)")
    p.add_argument("--scale", type=float, help="work per run as a share of a full run's (default 1, --quick 0.1)")
    p.add_argument("--only", help="run only the cases whose name matches this regex (cases: "
                                  + ", ".join(c.name for c in cases.CASES) + f", {cases.TRACES})")
    p.add_argument("--out", help="default BUILD/bench: results in OUT/cpu, OUT/dist, OUT/gpu; OUT/report.md")
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="default build")
    p.add_argument("--peer-dir", help="directory searched first for the peers' .so files")
    p.add_argument("--pin", action="store_true", help="run each repetition's processes, every allocator alike, "
                                                      "on the same CPUs, a window moved on at each repetition")
    return p.parse_args()


def thread_counts(args):
    if args.threads:
        return sorted({int(t) for t in args.threads.split(",")})
    if args.smoke:
        return [2]
    counts = [1]
    while counts[-1] * 2 <= args.max_threads:
        counts.append(counts[-1] * 2)
    return counts + [2 * args.max_threads] if counts[-1] == args.max_threads else counts + [args.max_threads]


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

def run_case(case, threads, alloc, rep, build, scale, pin):
    argv = case.command(build, threads, scale)
    cpus = runner.pinned_cpus(case.os_threads(threads), rep) if pin else None
    status, out, err, wall, rss = runner.run(argv, alloc.path, cpus=cpus)
    rec = {"case": case.name, "threads": threads, "allocator": alloc.name, "rep": rep,
           "argv": argv[1:], "wall": wall, "ru_maxrss_kib": rss, "ok": False}
    if cpus:
        rec["cpus"] = sorted(cpus)
    result = runner.parse_result(out)
    if result is not None:
        allocators.check_label(alloc, result.get("allocator"), " ".join(argv))
    if status != 0 or result is None:
        rec["error"] = runner.describe_failure(status, err)
        print(f"  {case.name} -t {threads} on {alloc.name}: FAILED ({rec['error']})", flush=True)
        return rec
    rec.update(ok=True, seconds=float(result["seconds"]), ops=int(result["ops"]),
               rss_kib=int(result["peak_rss_kib"]))
    if "thread_cpu_max" in result:
        rec.update(thread_cpu_min=float(result["thread_cpu_min"]), thread_cpu_max=float(result["thread_cpu_max"]))
    return rec


def run_cases(selected, threads, allocs, reps, build, scale, pin):
    runs = []
    for rep in range(reps):
        # Rotate the order too, so that no allocator always runs right after the same one.
        order = allocs[rep % len(allocs):] + allocs[:rep % len(allocs)]
        for case in selected:
            for t in threads:
                recs = [run_case(case, t, a, rep, build, scale, pin) for a in order]
                runs += recs
                cells = "  ".join(f"{r['allocator']} {r['seconds']:.3f}s" for r in recs if r["ok"])
                print(f"rep {rep + 1}/{reps}  {case.name:9} {t:3}T  {cells}", flush=True)
    return runs


def run_traces(threads, allocs, trace_reps, build):
    driver = os.path.join(build, "mmdriver")
    files = traces.find(REPO)
    if not os.path.exists(driver) or not files:
        print(f"run.py: trace set skipped: {'no ' + driver if not os.path.exists(driver) else 'no .rep under bench/traces'}")
        return []
    results = []
    for t in threads:
        for a in allocs:
            rows = traces.run(build, a, t, trace_reps, files, REPO)
            bad = [r for r in rows if not r["valid"]]
            print(f"traces -t {t} on {a.name}: {len(rows) - len(bad)} valid, {len(bad)} failed", flush=True)
            results += rows
    return results


def run_dist(build, out):
    """The dist part belongs to bench/dist/; the report here includes it."""
    print("run.py: running bench/dist/run.py", flush=True)
    return subprocess.run([sys.executable, os.path.join(BENCH, "dist", "run.py"), "--build", build,
                           "--out", out, "--no-report"], cwd=REPO).returncode


def has_gpu():
    if not shutil.which("nvidia-smi"):
        return False
    probe = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return probe.returncode == 0 and "GPU" in probe.stdout


def run_gpu(out):
    """The GPU part belongs to scripts/gpu-check, which writes its own
    report too; it runs only where a GPU is."""
    print("run.py: GPU found, running scripts/gpu-check", flush=True)
    return subprocess.run([os.path.join(REPO, "scripts", "gpu-check")], cwd=REPO,
                          env=dict(os.environ, OUT=out)).returncode


def write_results(out_dir, config, allocs, runs, trace_results):
    """results.json: everything the CPU section of the report is drawn from."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"machine": runner.machine(), "config": config, "allocators": [vars(a) for a in allocs],
                   "runs": runs, "traces": trace_results}, f, indent=1)
    print(f"run.py: wrote {out_dir}/results.json")


def main():
    args = parse_args()
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    scale, reps, trace_reps = MODES[mode]
    reps = args.reps or reps
    scale = args.scale or scale
    build = os.path.abspath(args.build)
    threads = thread_counts(args)
    selected = [c for c in cases.CASES if not args.only or re.search(args.only, c.name)]
    with_traces = not args.smoke and (not args.only or re.search(args.only, cases.TRACES))
    for c in selected:
        if not os.path.exists(os.path.join(build, c.program)):
            raise SystemExit(f"run.py: {build}/{c.program} not found; build first (make bench does)")
    probe = os.path.join(build, cases.CASES[0].program)
    allocs = allocators.find(build, args.peer_dir, probe, REPO, only_ours=args.smoke)
    print(f"run.py: {mode} run{', pinned' if args.pin else ''}, threads {threads}, {reps} repetitions, allocators "
          + ", ".join(a.name for a in allocs), flush=True)

    loadavg_before = os.getloadavg()[0]
    runs = run_cases(selected, threads, allocs, reps, build, scale, args.pin)
    trace_results = run_traces(threads, allocs, trace_reps, build) if with_traces else []
    failed = [r for r in runs if not r["ok"]] + [r for r in trace_results if not r["valid"]]

    med = summary.medians(runs)
    print()
    print(summary.render_text(*summary.time_rows(med, [c.name for c in selected], threads, allocs)))
    print("(median seconds; in brackets the peer's time over manymalloc's: above 1, manymalloc is faster)")
    if not args.smoke:
        config = {"mode": mode, "reps": reps, "threads": threads, "scale": scale, "trace_reps": trace_reps,
                  "loadavg_before": loadavg_before, "pinned": args.pin}
        out = os.path.abspath(args.out or os.path.join(build, "bench"))
        folders = {"cpu": os.path.join(out, "cpu")}
        write_results(folders["cpu"], config, allocs, runs, trace_results)
        if not args.only:
            folders["dist"] = os.path.join(out, "dist")
            if run_dist(build, folders["dist"]) != 0:
                failed.append("dist")
        if not args.only and has_gpu():
            folders["gpu"] = os.path.join(out, "gpu")
            if run_gpu(folders["gpu"]) != 0:
                failed.append("gpu")
        print()
        from report import main as report_main   # matplotlib only where plots are drawn
        if report_main.main([f"--{part}={folder}" for part, folder in folders.items()] + ["--out", out]) != 0:
            failed.append("report")
    if failed:
        print(f"run.py: {len(failed)} failed runs", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
