# SPDX-License-Identifier: Apache-2.0
"""bench/dist/mpi_env.py: what the dist drivers share: the environment
they give mpirun, one run of a program under a scheduler layout, the
options that set a driver's size, and the report of what they wrote.

As root in a container, mpirun must be allowed explicitly, and the
shared-memory transport must not use CMA (ptrace is not permitted there).
The environment wins over these defaults (say
OMPI_MCA_btl_vader_single_copy_mechanism=cma where CMA works).
"""
import os
import shutil
import subprocess
import sys

BIG_HOST = 16   # cores from which a driver's default size is the full figure
REPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "report", "main.py")
DEFAULTS = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def mpi_env(extra=None):
    """os.environ over DEFAULTS, then extra on top (a value of None removes
    the variable)."""
    env = dict(DEFAULTS, **os.environ)
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_layout(tool, program, mode, layout, workers, program_args, bind="auto", mpirun_args="", timeout=None):
    """One run of program under mpirun: the schedulers of layout
    (MANYMALLOC_SCHEDULERS; "1" is one) and `workers` workers, every
    allocation a round trip in mode "remote" (MANYMALLOC_DIST_LEASE=0),
    each rank bound to a core where bind is "auto" and the ranks fit the
    cores. tool names the driver in the lines it prints. True if it ran
    and exited 0."""
    ranks = sum(int(n) for n in layout.split(",")) + workers
    env = mpi_env({"MANYMALLOC_SCHEDULERS": layout if layout != "1" else None,
                   "MANYMALLOC_DIST_LEASE": "0" if mode == "remote" else None})
    where = "core" if bind == "auto" and ranks <= (os.cpu_count() or 1) else "none"
    argv = [shutil.which("mpirun"), "--oversubscribe", "--bind-to", where, *mpirun_args.split(), "-np", str(ranks),
            program, *program_args]
    print(f"{tool}: {mode}, MANYMALLOC_SCHEDULERS={layout}, {workers} workers: {' '.join(argv[1:])}", flush=True)
    try:
        status = subprocess.run(argv, env=env, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        status = "timed out"
    if status != 0:
        print(f"{tool}: {os.path.basename(program)} ({mode}, layout {layout}, {workers} workers) failed: {status}",
              flush=True)
    return status == 0


def size_options(parser, what, options, prefix=""):
    """The options that set a driver's size: for each (name, type, small,
    full, about) of options, --<prefix><name>, whose default is
    MANYMALLOC_BENCH_<WHAT>_<NAME> from the environment, else what sized()
    fills in after parsing."""
    for name, kind, small, full, about in options:
        var = f"MANYMALLOC_BENCH_{what}_{name.upper()}"
        env = os.environ.get(var)
        parser.add_argument(f"--{prefix}{name}", type=kind, default=kind(env) if env else None,
                            help=f"{about} (small: {small}, full: {full}); or {var}")


def sized(args, options, prefix="", full=False):
    """The options size_options() added that were neither given nor set in
    the environment get the full figure on a host of BIG_HOST cores or more
    (or with full), the small one below."""
    full = full or (os.cpu_count() or 2) >= BIG_HOST
    for name, _, small, big, _ in options:
        dest = (prefix + name).replace("-", "_")
        if getattr(args, dest) is None:
            setattr(args, dest, big if full else small)
    return args


def report(out):
    """bench/report/main.py on the dist results in out (report.md there);
    True if it wrote it and every correctness check the runs recorded passed."""
    return subprocess.run([sys.executable, REPORT, "--dist", out]).returncode == 0
