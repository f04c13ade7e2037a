#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the dist benchmarks and writes their report (bench/run.py calls it
after the CPU benchmarks; it also runs alone).

    python3 bench/dist/run.py [--build DIR] [--out DIR] [--scale F] [--no-report]

dist-frag runs the fragmentation experiment of the Myrmics paper's Fig. 4a-c.
Then, where mpirun is found, dist-latency runs under mpirun with 2 ranks (1
scheduler, 1 worker), and dist-load with 1, 2, 4, ... workers up to one less
than the cores, each twice: with MANYMALLOC_DIST_LEASE=0, where every call
is a round trip to the scheduler, and by default, where 64 B objects come
from leased slabs. dist-tree then compares one scheduler with a tree of them
(the Myrmics paper's Fig. 4h): --tree-workers workers (64) under each
MANYMALLOC_SCHEDULERS layout of --tree-layouts ("1;1,4;1,4,16", the last
only where there are as many workers as leaves), in both modes, all
oversubscribed. Its size defaults to the full figure (30000 nodes a worker,
5 repetitions, the full ring of exchanges) on 16 cores or more and to a few
minutes' worth below that (5000 nodes, 3 repetitions, 2 stages); the
options, or MANYMALLOC_BENCH_TREE_{WORKERS,NODES,REPS,STAGES,LAYOUTS} in the
environment (as make bench runs it), set it; --tree-workers 0 skips it.
The list exchange then runs
again across 4 hosts made from namespaces by scripts/dist-hosts (8 workers,
or MANYMALLOC_LISTS_HOSTS_WORKERS; L from MANYMALLOC_LISTS_LENS or 30000
with MANYMALLOC_LISTS_FULL=1, else 1000), where this machine lets it make
them. bench/report/main.py then draws the plots, writes report.md and prints
the issue's figures (unless --no-report: bench/run.py reports every part at
once).
"""
import argparse
import os
import shutil
import subprocess
import sys

from mpi_env import mpi_env, report, size_options, sized

DIST = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(DIST))
RESULTS = ["frag.json", "latency_remote.json", "latency_local.json", "load.jsonl", "tree.jsonl"]
LATENCY_TIMEOUT = 300   # seconds a dist-latency run may take before it counts as hung
TREE_TIMEOUT = 600      # the same for a dist-tree run
HOSTS = 4               # namespace hosts of the list exchange across hosts
TREE = [("workers", int, 64, 64, "dist-tree's workers (0 skips dist-tree)"),
        ("nodes", int, 5000, 30000, "list nodes a worker allocates"),
        ("reps", int, 3, 5, "repetitions"),
        ("stages", int, 2, 0, "ring stages of the exchange, 0: workers - 1"),
        ("layouts", str, "1;1,4;1,4,16", "1;1,4;1,4,16", "MANYMALLOC_SCHEDULERS layouts, ';' between them")]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="default build")
    p.add_argument("--out", help="default BUILD/bench/dist")
    p.add_argument("--scale", default="1", help="dist-frag's steps times this (default 1)")
    p.add_argument("--no-report", action="store_true", help="only run (bench/run.py reports every part at once)")
    size_options(p, "TREE", TREE, prefix="tree-")
    return sized(p.parse_args(), TREE, prefix="tree-")


def worker_counts(max_workers):
    """1, 2, 4, ... up to max_workers, and max_workers itself."""
    counts = [1]
    while counts[-1] * 2 <= max_workers:
        counts.append(counts[-1] * 2)
    return counts + ([max_workers] if counts[-1] != max_workers else [])


def run_mpi(build, name, ranks, out, args=(), schedulers=None, timeout=LATENCY_TIMEOUT):
    """dist-<name> under mpirun with `ranks` ranks, in both modes, with
    MANYMALLOC_SCHEDULERS=schedulers (None: unset); the number of failed
    runs."""
    program = os.path.join(build, f"dist-{name}")
    mpirun = shutil.which("mpirun")
    if not mpirun or not os.path.exists(program):
        print(f"dist/run.py: {name} skipped: {'no mpirun' if not mpirun else 'no ' + program}", flush=True)
        return 0
    failed = 0
    for lease in ("0", None):
        env = mpi_env()
        for key, value in (("MANYMALLOC_DIST_LEASE", lease), ("MANYMALLOC_SCHEDULERS", schedulers)):
            env.pop(key, None)
            if value is not None:
                env[key] = value
        argv = [mpirun, "--oversubscribe", "-np", str(ranks), program, "--out", out, *map(str, args)]
        try:
            status = subprocess.run(argv, env=env, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            status = "timed out"
        if status != 0:
            print(f"dist/run.py: dist-{name} -np {ranks} (MANYMALLOC_DIST_LEASE={lease or 'unset'}"
                  f"{', MANYMALLOC_SCHEDULERS=' + schedulers if schedulers else ''}) failed: {status}",
                  flush=True)
            failed += 1
    return failed


def run_tree(build, out, args):
    """dist-tree under each layout of --tree-layouts with --tree-workers
    workers; the number of failed runs. A layout with more leaves than
    workers is skipped."""
    workers = args.tree_workers
    if workers <= 0:
        return 0
    failed = 0
    for layout in filter(None, (l.strip() for l in args.tree_layouts.split(";"))):
        levels = [int(n) for n in layout.split(",")]
        if levels[-1] > workers:
            print(f"dist/run.py: dist-tree MANYMALLOC_SCHEDULERS={layout} skipped: {levels[-1]} leaves, "
                  f"{workers} workers", flush=True)
            continue
        failed += run_mpi(build, "tree", sum(levels) + workers, out,
                          ["--nodes", args.tree_nodes, "--reps", args.tree_reps, "--stages", args.tree_stages],
                          schedulers=None if layout == "1" else layout, timeout=TREE_TIMEOUT)
    return failed


def run_hosts_lists(build, out):
    """The linked-list exchange across HOSTS namespace hosts made by
    scripts/dist-hosts (the issue's figure: 4 hosts, 8 workers, ours with one
    scheduler and with a leaf a host), appended to run_lists.py's results;
    skipped with one line where namespaces cannot be made. 1 if it failed."""
    script = os.path.join(REPO, "scripts", "dist-hosts")
    check = subprocess.run([script, "--check"], capture_output=True, text=True)
    if check.returncode != 0:
        print(f"dist/run.py: lists across hosts skipped: {(check.stdout + check.stderr).strip()}", flush=True)
        return 0
    workers = int(os.environ.get("MANYMALLOC_LISTS_HOSTS_WORKERS", "8"))
    slots = -(-(workers + 1 + HOSTS) // HOSTS)   # the workers, the top and a leaf a host
    argv = [script, "--hosts", str(HOSTS), "--slots", str(slots), "--exec", sys.executable,
            os.path.join(DIST, "run_lists.py"), "--build", build, "--out", out, "--append", "--no-report",
            "--nets", "hosts", "--workers", str(workers), "--schedulers", "1", "--schedulers", f"1,{HOSTS}"]
    return subprocess.run(argv).returncode != 0


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
    failed += run_tree(build, out, args)
    # Barnes-Hut N-body (Fig. 4e-f): its own driver, sized by MANYMALLOC_BENCH_NBODY_*.
    failed += subprocess.run([sys.executable, os.path.join(DIST, "run_nbody.py"), "--build", build, "--out", out,
                              "--no-report"]).returncode != 0
    # Delaunay triangulation (Sect. 6.4, Fig. 4d): run_delaunay.py, sized by MANYMALLOC_BENCH_DELAUNAY_*.
    failed += subprocess.run([sys.executable, os.path.join(DIST, "run_delaunay.py"), "--build", build, "--out", out,
                              "--no-report"]).returncode != 0
    # The linked-list exchange (Sect. 6.5) against its peers: run_lists.py, sized by MANYMALLOC_LISTS_*.
    failed += subprocess.run([sys.executable, os.path.join(DIST, "run_lists.py"), "--build", build, "--out", out,
                              "--no-report"]).returncode != 0
    failed += run_hosts_lists(build, out)
    # Shard migration against MPI pack/rebuild: run_shards.py, sized by MANYMALLOC_BENCH_SHARDS_*.
    failed += subprocess.run([sys.executable, os.path.join(DIST, "run_shards.py"), "--build", build, "--out", out,
                              "--no-report"]).returncode != 0
    if not args.no_report:
        failed += not report(out)
    # The scaling model (docs/dist-scaling.md), from the committed results: model.md, in about a second.
    failed += subprocess.run([sys.executable, os.path.join(DIST, "model.py"), "--out", out]).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
