#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs dist-delaunay, the Delaunay triangulation of the Myrmics paper's
Sect. 6.4 (Fig. 4d, Fig. 5), over worker counts and scheduler layouts, then
the report (bench/dist/run.py calls it; it also runs alone).

    python3 bench/dist/run_delaunay.py [--build DIR] [--out DIR] [--full]
        [--points N] [--reps R] [--workers 1,4,16] [--layouts "1;1,4"]
        [--modes local,remote] [--round-points M] [--sample S] [--repeat K]
        [--bind auto|none] [--mpirun-args ARGS] [--timeout S] [--no-report]

Each run is `mpirun --oversubscribe -np S+W BUILD/dist-delaunay ...` with
MANYMALLOC_SCHEDULERS set to the layout (S schedulers in all) and W workers,
a power of four (the grid decomposition needs it). A layout is run with W
workers where it has no more leaves than W; one scheduler ("1") with every
W. Modes: local (the default leases) and remote (MANYMALLOC_DIST_LEASE=0).
Every run repeats the triangulation --reps times and reports each phase's
median; --repeat K runs the whole plan K times, round after round, and the
report takes each configuration's median run. --bind auto (the default)
binds each rank to a core where the ranks fit the cores.

The size: on fewer than 16 cores (as here, 2) a small run, 50000 points,
3 repetitions, 1, 4 and 16 workers, one scheduler, oversubscribed; on 16
cores or more, or with --full, the issue's figure: 10^6 points, 3
repetitions, 1, 4 and 16 workers. The options, or
MANYMALLOC_BENCH_DELAUNAY_{POINTS,REPS,WORKERS,LAYOUTS} in the environment,
set it.

Every run checks its result (dist-delaunay: the triangle count 2n + 2 of
the n points and the frame's 4 corners, links, orientation, areas, and no
point inside the circumcircle of a sample of --sample triangles, all when
fewer); a failed check fails the run. Appends to OUT/delaunay.jsonl, which
it empties first.
"""
import argparse
import os
import shutil
import sys

from mpi_env import BIG_HOST, report, run_layout, size_options, sized

DIST = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(DIST))
SIZE = [("points", int, 50000, 1000000, "points"), ("reps", int, 3, 3, "repetitions within a run"),
        ("workers", str, "1,4,16", "1,4,16", "worker counts, commas (powers of four)"),
        ("layouts", str, "1", "1", "MANYMALLOC_SCHEDULERS layouts, ';' or ':' between them")]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="where dist-delaunay is (default build)")
    p.add_argument("--out", help="default BUILD/bench/dist")
    p.add_argument("--full", action="store_true", help=f"the full size even below {BIG_HOST} cores")
    size_options(p, "DELAUNAY", SIZE)
    p.add_argument("--modes", default="local", help="local (default leases) and/or remote, commas")
    p.add_argument("--round-points", type=int, default=1024,
                   help="round r < k inserts up to this x 4^(r+1) points in all (default 1024)")
    p.add_argument("--sample", type=int, default=100000, help="triangles checked for empty circumcircles")
    p.add_argument("--repeat", type=int, default=1, help="rounds of the whole plan (default 1)")
    p.add_argument("--bind", choices=("auto", "none"), default="auto",
                   help="auto: --bind-to core where the ranks fit the cores (default)")
    p.add_argument("--mpirun-args", default="", help="more mpirun options")
    p.add_argument("--timeout", type=int, default=900, help="seconds a run may take (default 900)")
    p.add_argument("--no-report", action="store_true", help="do not write the report")
    args = p.parse_args(argv)
    return sized(args, SIZE, full=args.full)


def plan(args):
    workers = [int(w) for w in str(args.workers).split(",") if w.strip()]
    for w in workers:
        if w < 1 or w & (w - 1) or (w.bit_length() - 1) % 2:
            raise SystemExit(f"run_delaunay.py: {w} workers: not a power of four")
    layouts = [l.strip() for l in args.layouts.replace(":", ";").split(";") if l.strip()]
    runs = []
    for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
        for w in sorted(workers):
            for layout in layouts:
                if layout != "1" and (int(layout.split(",")[-1]) > w or w == 1):
                    continue
                runs.append((mode, layout, w))
    return runs


def run_one(args, program, out, mode, layout, workers):
    return run_layout("run_delaunay.py", program, mode, layout, workers,
                      ["--out", out, "--points", str(args.points), "--reps", str(args.reps),
                       "--round-points", str(args.round_points), "--sample", str(args.sample)],
                      args.bind, args.mpirun_args, args.timeout)


def main(argv=None):
    args = parse_args(argv)
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out or os.path.join(build, "bench", "dist"))
    program = os.path.join(build, "dist-delaunay")
    if not shutil.which("mpirun") or not os.path.exists(program):
        print(f"run_delaunay.py: skipped: {'no mpirun' if not shutil.which('mpirun') else 'no ' + program}",
              flush=True)
        return 0
    os.makedirs(out, exist_ok=True)
    results = os.path.join(out, "delaunay.jsonl")
    if os.path.exists(results):   # a failed run leaves no earlier run's numbers in the report
        os.remove(results)
    failed = 0
    for mode, layout, workers in [run for _ in range(max(1, args.repeat)) for run in plan(args)]:
        failed += not run_one(args, program, out, mode, layout, workers)
    if not args.no_report:
        failed += not report(out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
