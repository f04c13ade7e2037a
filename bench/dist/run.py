#!/usr/bin/env python3
"""Runs the dist benchmarks and writes their report (bench/run.py calls it
after the CPU benchmarks; it also runs alone).

    python3 bench/dist/run.py [--build DIR] [--out DIR] [--scale F]

dist-frag runs the fragmentation experiment of the Myrmics paper's Fig. 4a-c.
Then, where mpirun is found, dist-latency runs under mpirun with 2 ranks (1
scheduler, 1 worker), and dist-load with 1, 2, 4, ... workers up to one less
than the cores, each twice: with MANYMALLOC_DIST_LEASE=0, where every call
is a round trip to the scheduler, and by default, where 64 B objects come
from leased slabs. report.py then draws the plots, writes report.md and
prints its tables.
"""
import argparse
import os
import shutil
import subprocess
import sys

DIST = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(DIST))
# mpirun as root in a container: allowed explicitly, and no CMA (ptrace is
# not permitted there) for the shared-memory transport.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
RESULTS = ["frag.json", "latency_remote.json", "latency_local.json", "load.jsonl"]
LATENCY_TIMEOUT = 300   # seconds a dist-latency run may take before it counts as hung


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="default build")
    p.add_argument("--out", help="default BUILD/bench/dist")
    p.add_argument("--scale", default="1", help="dist-frag's steps times this (default 1)")
    return p.parse_args()


def worker_counts(max_workers):
    """1, 2, 4, ... up to max_workers, and max_workers itself."""
    counts = [1]
    while counts[-1] * 2 <= max_workers:
        counts.append(counts[-1] * 2)
    return counts + ([max_workers] if counts[-1] != max_workers else [])


def run_mpi(build, name, ranks, out):
    """dist-<name> under mpirun with `ranks` ranks, in both modes; the number
    of failed runs."""
    program = os.path.join(build, f"dist-{name}")
    mpirun = shutil.which("mpirun")
    if not mpirun or not os.path.exists(program):
        print(f"dist/run.py: {name} skipped: {'no mpirun' if not mpirun else 'no ' + program}", flush=True)
        return 0
    failed = 0
    for lease in ("0", None):
        env = dict(os.environ, **MPI_ENV)
        env.pop("MANYMALLOC_DIST_LEASE", None)
        if lease is not None:
            env["MANYMALLOC_DIST_LEASE"] = lease
        argv = [mpirun, "--oversubscribe", "-np", str(ranks), program, "--out", out]
        try:
            status = subprocess.run(argv, env=env, timeout=LATENCY_TIMEOUT).returncode
        except subprocess.TimeoutExpired:
            status = "timed out"
        if status != 0:
            print(f"dist/run.py: dist-{name} -np {ranks} (MANYMALLOC_DIST_LEASE={lease or 'unset'}) "
                  f"failed: {status}", flush=True)
            failed += 1
    return failed


def main():
    args = parse_args()
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out or os.path.join(build, "bench", "dist"))
    frag = os.path.join(build, "dist-frag")
    if not os.path.exists(frag):
        raise SystemExit(f"dist/run.py: {frag} not found; build first (make bench does)")
    os.makedirs(out, exist_ok=True)
    for name in RESULTS:   # a failed run leaves no earlier run's numbers in the report
        if os.path.exists(os.path.join(out, name)):
            os.remove(os.path.join(out, name))
    failed = subprocess.run([frag, "--out", out, "--scale", args.scale]).returncode != 0
    failed += run_mpi(build, "latency", 2, out)
    # One scheduler's core, the rest workers: never more ranks than cores.
    for workers in worker_counts(max(1, (os.cpu_count() or 2) - 1)):
        failed += run_mpi(build, "load", workers + 1, out)
    failed += subprocess.run([sys.executable, os.path.join(DIST, "report.py"), "--dir", out]).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
