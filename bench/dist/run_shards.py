#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs dist-shards (shard migration: regions sent whole against hand-written
MPI pack/rebuild, issue #32) and writes the report.

    python3 bench/dist/run_shards.py [--build DIR] [--out DIR] [--no-report]
        [--workers LIST] [--keys N] [--shards S] [--move K] [--reps R]
        [--lookups L] [--values LIST] [--settle LIST] [--layout L]

dist-shards runs under mpirun --oversubscribe once for each value-size range
of --values ("MIN-MAX", a comma list), pause of --settle (ms before each
timed migration, a comma list) and worker count of --workers (a comma list;
each run is 1 scheduler + W ranks, or as many schedulers as --layout names),
both variants in the same invocation, and appends a line to
OUT/shards.jsonl (emptied first). Below 16 cores the size is small (2
workers, 200000 keys, 4 shards a worker, 2 moved, 64-256 B values, 5
repetitions); from 16 cores it is the full figure (2, 8 and 14 workers, 10^6
keys, 8 shards a worker, 4 moved, values of 64-256 B and of 64 B, 5
repetitions). Each option also reads MANYMALLOC_BENCH_SHARDS_<NAME>
(WORKERS, KEYS, ...) from the environment; --workers 0 skips the runs.
bench/report/main.py then tables and plots what was written (unless
--no-report: bench/dist/run.py reports it with the rest).
"""
import argparse
import os
import shutil
import subprocess
import sys

from mpi_env import mpi_env, report, size_options, sized

DIST = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(DIST))
RESULT = "shards.jsonl"
TIMEOUT = 600       # seconds a run may take before it counts as hung
SIZE = [("workers", str, "2", "2,8,14", "worker counts, a comma list (0: skip)"),
        ("keys", int, 200000, 1000000, "keys in all"),
        ("shards", int, 4, 8, "shards a worker"),
        ("move", int, 2, 4, "shards each sender moves"),
        ("reps", int, 5, 5, "repetitions (medians reported)"),
        ("lookups", int, 200000, 1000000, "lookups a receiver in the lookups/s phase"),
        ("values", str, "64-256", "64-256,64-64", "value sizes MIN-MAX in bytes, a comma list of them (a run each)"),
        ("settle", str, "0", "0", "ms of pause before each timed migration, a comma list (a run each)"),
        ("layout", str, "1", "1", "MANYMALLOC_SCHEDULERS")]


def run(build, out, args):
    """dist-shards once per worker count; the number of failed runs."""
    counts = [int(w) for w in str(args.workers).split(",") if w.strip()]
    counts = [w for w in counts if w > 0]
    if not counts:
        return 0
    program = os.path.join(build, "dist-shards")
    mpirun = shutil.which("mpirun")
    if not mpirun or not os.path.exists(program):
        print(f"dist/run_shards.py: skipped: {'no mpirun' if not mpirun else 'no ' + program}", flush=True)
        return 0
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, RESULT)
    if os.path.exists(path):   # a failed run leaves no earlier run's numbers
        os.remove(path)
    layout = args.layout
    schedulers = sum(int(n) for n in layout.split(","))
    env = mpi_env()
    env.pop("MANYMALLOC_SCHEDULERS", None)
    if layout != "1":
        env["MANYMALLOC_SCHEDULERS"] = layout
    failed = 0
    values = [v.strip().split("-") for v in args.values.split(",") if v.strip()]
    settles = [int(x) for x in str(args.settle).split(",") if x.strip()]
    for (vmin, vmax), settle, workers in ((v, p, w) for v in values for p in settles for w in counts):
        if workers < 2:
            print(f"dist/run_shards.py: {workers} worker(s) skipped: a migration needs 2", flush=True)
            continue
        argv = [mpirun, "--oversubscribe", "-np", str(schedulers + workers), program, "--out", out,
                "--keys", str(args.keys), "--shards", str(args.shards),
                "--move", str(args.move), "--reps", str(args.reps),
                "--lookups", str(args.lookups), "--value-min", vmin, "--value-max", vmax,
                "--settle-ms", str(settle)]
        try:
            status = subprocess.run(argv, env=env, timeout=TIMEOUT).returncode
        except subprocess.TimeoutExpired:
            status = "timed out"
        if status != 0:
            print(f"dist/run_shards.py: dist-shards with {workers} workers failed: {status}", flush=True)
            failed += 1
    return failed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="where dist-shards is (default build)")
    p.add_argument("--out", help="default BUILD/bench/dist")
    p.add_argument("--no-report", action="store_true", help="only run (bench/dist/run.py reports it with the rest)")
    size_options(p, "SHARDS", SIZE)
    args = sized(p.parse_args(), SIZE)
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out or os.path.join(build, "bench", "dist"))
    failed = run(build, out, args)
    if not args.no_report and os.path.exists(os.path.join(out, RESULT)):
        failed += not report(out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
