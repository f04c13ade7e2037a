#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs dist-nbody, the Barnes-Hut N-body simulation of the Myrmics paper's
Sect. 6.3 (Fig. 4e-f), over worker counts and scheduler layouts, then
the report (bench/dist/run.py calls it; it also runs alone).

    python3 bench/dist/run_nbody.py [--build DIR] [--out DIR] [--full]
        [--bodies N] [--steps K] [--warmup K] [--workers 1,2,4,8]
        [--layouts "1;1,2;1,4"] [--modes local,remote] [--theta T]
        [--alloc balloc|alloc] [--cost interactions|visits|time] [--repeat R]
        [--bind auto|none] [--check file|ref|none] [--mpirun-args ARGS]
        [--timeout S] [--no-report]

Each run is `mpirun --oversubscribe -np S+W BUILD/dist-nbody ...` with
MANYMALLOC_SCHEDULERS set to the layout (S schedulers in all) and W workers,
a power of two. A layout is run with W workers where it has no more leaves
than W; one scheduler ("1") with every W. Modes: local (the default leases)
and remote (MANYMALLOC_DIST_LEASE=0, every allocation a round trip, the
paper's protocol). --repeat R runs the whole plan R times, round after
round, so that a slow spell of the host does not fall on one configuration
only; the report takes each configuration's median run. --bind auto (the
default) binds each rank to a core (--bind-to core) where the ranks fit the
cores, and binds nothing where they do not.

The size: on fewer than 16 cores (as here, 2) a small run, 4000 bodies,
2 timed steps after 1 warm-up, 1, 2 and 4 workers, layouts 1 and 1,2,
oversubscribed; on 16 cores or more, or with --full, the issue's figure:
100000 bodies, 4 steps after 3 warm-up steps, 1-16 workers, layouts 1, 1,2
and 1,4. The options, or MANYMALLOC_BENCH_NBODY_{BODIES,STEPS,WARMUP,
WORKERS,LAYOUTS} in the environment, set it.

Checks (--check): file (the default when 1 worker is among the runs): the
1-worker, one-scheduler run of each size is the serial run; it writes the
final positions (--dump) and every other run of that size compares its own
with them (--compare), within dist-nbody's stated tolerance; ref: every run
also repeats the steps serially on worker 0 (--check ref; slow at full
size); none: only the checks every run makes (no tree cell opened without
its children, first-step accelerations against direct sums on a sample).
A failed check fails the run. Appends to OUT/nbody.jsonl, which it empties
first.
"""
import argparse
import os
import shutil
import sys

from mpi_env import BIG_HOST, report, run_layout, size_options, sized

DIST = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(DIST))
SIZE = [("bodies", int, 4000, 100000, "bodies"), ("steps", int, 2, 4, "timed steps"),
        ("warmup", int, 1, 3, "untimed steps first"),
        ("workers", str, "1,2,4", "1,2,4,8,16", "worker counts, commas (powers of two)"),
        ("layouts", str, "1;1,2", "1;1,2;1,4", "MANYMALLOC_SCHEDULERS layouts, ';' or ':' between them")]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="where dist-nbody is (default build)")
    p.add_argument("--out", help="default BUILD/bench/dist")
    p.add_argument("--full", action="store_true", help=f"the full size even below {BIG_HOST} cores")
    size_options(p, "NBODY", SIZE)
    p.add_argument("--modes", default="local", help="local (default leases) and/or remote, commas")
    p.add_argument("--theta", type=float, default=0.5, help="opening angle (default 0.5)")
    p.add_argument("--alloc", choices=("balloc", "alloc"), default="balloc",
                   help="a level's cells by one sys_balloc (default) or one sys_alloc each")
    p.add_argument("--cost", choices=("interactions", "visits", "time"), default="interactions",
                   help="what the bisection balances: a body's interactions in the last step (default, the "
                        "paper's), those plus the cells it visited, or the ns its force walk took")
    p.add_argument("--repeat", type=int, default=1, help="rounds of the whole plan (default 1)")
    p.add_argument("--bind", choices=("auto", "none"), default="auto",
                   help="auto: --bind-to core where the ranks fit the cores (default)")
    p.add_argument("--check", choices=("file", "ref", "none"), help="see above (default file, or ref "
                   "when no 1-worker run is asked for)")
    p.add_argument("--mpirun-args", default="", help="more mpirun options, e.g. '--bind-to core'")
    p.add_argument("--timeout", type=int, default=900, help="seconds a run may take (default 900)")
    p.add_argument("--no-report", action="store_true", help="do not write the report")
    args = p.parse_args(argv)
    return sized(args, SIZE, full=args.full)


def plan(args):
    """(mode, layout, workers) in the order they run: the 1-worker,
    one-scheduler run of a mode first (the serial run the others compare
    with), then by workers and layout."""
    workers = [int(w) for w in str(args.workers).split(",") if w.strip()]
    for w in workers:
        if w < 1 or w & (w - 1):
            raise SystemExit(f"run_nbody.py: {w} workers: not a power of two")
    layouts = [l.strip() for l in args.layouts.replace(":", ";").split(";") if l.strip()]
    runs = []
    for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
        for w in sorted(workers):
            for layout in layouts:
                leaves = int(layout.split(",")[-1])
                if layout != "1" and (leaves > w or w == 1):
                    continue
                runs.append((mode, layout, w))
    return runs


def run_one(args, program, out, mode, layout, workers, check_args):
    return run_layout("run_nbody.py", program, mode, layout, workers,
                      ["--out", out, "--bodies", str(args.bodies), "--steps", str(args.steps),
                       "--warmup", str(args.warmup), "--theta", str(args.theta), "--alloc", args.alloc,
                       "--cost", args.cost, *check_args],
                      args.bind, args.mpirun_args, args.timeout)


def main(argv=None):
    args = parse_args(argv)
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out or os.path.join(build, "bench", "dist"))
    program = os.path.join(build, "dist-nbody")
    if not shutil.which("mpirun") or not os.path.exists(program):
        print(f"run_nbody.py: skipped: {'no mpirun' if not shutil.which('mpirun') else 'no ' + program}", flush=True)
        return 0
    os.makedirs(out, exist_ok=True)
    results = os.path.join(out, "nbody.jsonl")
    if os.path.exists(results):   # a failed run leaves no earlier run's numbers in the report
        os.remove(results)
    runs = plan(args)
    check = args.check or ("file" if any(w == 1 for _, _, w in runs) else "ref")
    failed = 0
    serial = {}   # mode -> positions file its 1-worker run wrote
    for mode, layout, workers in [run for _ in range(max(1, args.repeat)) for run in runs]:
        if check == "ref":
            check_args = ["--check", "ref"]
        elif check == "none":
            check_args = ["--check", "none"]
        elif workers == 1 and layout == "1" and mode not in serial:
            serial[mode] = os.path.join(out, f"nbody_serial_{mode}_{args.bodies}.pos")
            check_args = ["--check", "none", "--dump", serial[mode]]
        elif mode in serial and os.path.exists(serial[mode]):
            check_args = ["--check", "none", "--compare", serial[mode]]
        else:
            check_args = ["--check", "ref"]
        failed += not run_one(args, program, out, mode, layout, workers, check_args)
    for path in serial.values():
        if os.path.exists(path):
            os.remove(path)
    if not args.no_report:
        failed += not report(out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
