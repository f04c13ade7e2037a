#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the linked-list exchange (the Myrmics paper's Sect. 6.5, Fig. 4g-h)
on the dist allocator and on its peers, in the same invocation, and writes
lists.jsonl, lists_meta.json and the report (bench/report/main.py).

    python3 bench/dist/run_lists.py [--build DIR] [--out DIR] [--full]
        [--workers 2,4] [--lens 1000,10000] [--schedulers 1 [--schedulers 1,2 ...]]
        [--nets shm,tcp] [--reps N] [--impls ours-alloc,...] [--timeout S]
        [--hostfile FILE] [--mpirun-args "..."] [--append] [--no-report] [--dry-run]

Programs (bench/dist/lists*.c, built by `make bench` into BUILD): dist-lists
(ours: --variant alloc, one sys_alloc a node as the paper, and balloc),
dist-lists-mpi (hand-written MPI: pack, and bulk, one block a list, the
upper bound), dist-lists-rma (per-node MPI-3 RMA) and dist-lists-shmem
(per-node OpenSHMEM, under oshrun --mca osc ^rdma). Ours runs with
W workers plus the schedulers of each MANYMALLOC_SCHEDULERS layout; every
peer with W processes. For each net, list length and worker count every
program runs once (its repetitions inside it), one after the other.

Nets: shm, the transports Open MPI picks on one host (vader, osc/sm, UCX
shared memory for OSHMEM); tcp, everything over loopback TCP (btl self,tcp
on lo, osc not sm, UCX_TLS=self,tcp), as a network would carry it; hosts,
separate hosts: only under `scripts/dist-hosts --exec`, which makes them
from namespaces and points mpirun at them (TCP between hosts, shared memory
within one; windows through osc pt2pt). --append adds this run's lines to
those already in OUT, as bench/dist/run.py does for its hosts step.

Sizes. By default (here, 2 cores, a few minutes): shm with 2 and 4 workers,
L = 1000 and 10000, one scheduler, and the two-level tree 1,2 for 4 workers;
tcp with 2 workers and L = 1000. --full (or MANYMALLOC_LISTS_FULL=1, for
the 16-core host): shm with 8 and 16 workers, L = 1000, 10000 and 30000,
schedulers 1 and 1,2; tcp with 8 workers, L = 30000; hosts (where asked for) with 8 workers,
L = 30000 (--full) or 1000. Options override
either; each also reads MANYMALLOC_LISTS_<OPTION> (WORKERS, LENS, NETS,
REPS, IMPLS, TIMEOUT, HOSTFILE, MPIRUN_ARGS; SCHEDULERS space-separated,
as "1 1,2"). Per-node peers over tcp run 1 repetition and no warm-up (a
node is a round trip there). A run that fails or passes --timeout is
recorded as such (OpenSHMEM crashes at 8 processes and more in containers),
never as a number.

mpirun runs with --oversubscribe and, as root in a container, with
OMPI_ALLOW_RUN_AS_ROOT and btl_vader_single_copy_mechanism none. The rest of
the environment passes through: MANYMALLOC_DIST_LEASE=0 runs ours with every
sys_alloc a round trip to the scheduler, as the paper's protocol (its JSON
lines say lease false).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from mpi_env import DEFAULTS, mpi_env, report

DIST = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(DIST))
# What each net adds to the environment of every run.
NETS = {
    "shm": {},
    "tcp": {"OMPI_MCA_btl": "self,tcp", "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_osc": "^sm,rdma",
            "UCX_TLS": "self,tcp", "UCX_NET_DEVICES": "lo"},
    # scripts/dist-hosts sets the BTLs (tcp between hosts on the bridge, vader within one); one
    # window spans hosts only through osc pt2pt (osc sm needs one host, osc rdma RDMA-capable BTLs).
    "hosts": {"OMPI_MCA_osc": "pt2pt"},
}
NET_ABOUT = {
    "shm": "the transports Open MPI picks on one host",
    "tcp": "everything over loopback TCP (btl self,tcp on lo; osc neither sm nor rdma; UCX_TLS=self,tcp)",
    "hosts": "the namespace hosts of scripts/dist-hosts: TCP between hosts over their bridge, shared memory "
             "within one (btl self,vader,tcp; osc pt2pt)",
}
# impl: (program, argv, launcher, per-node)
IMPLS = {
    "ours-alloc": ("dist-lists", ["--variant", "alloc"], "mpirun", False),
    "ours-balloc": ("dist-lists", ["--variant", "balloc"], "mpirun", False),
    "mpi-pack": ("dist-lists-mpi", ["--variant", "pack"], "mpirun", False),
    "mpi-bulk": ("dist-lists-mpi", ["--variant", "bulk"], "mpirun", False),
    "mpi-rma": ("dist-lists-rma", [], "mpirun", True),
    "shmem": ("dist-lists-shmem", [], "oshrun", True),
}
SMALL = {"workers": "2,4", "lens": "1000,10000", "schedulers": ["1", "1,2"], "nets": "shm,tcp",
         "tcp_workers": "2", "tcp_lens": "1000", "hosts_workers": "8", "hosts_lens": "1000",
         "tree_workers_min": 4}
FULL = {"workers": "8,16", "lens": "1000,10000,30000", "schedulers": ["1", "1,2"], "nets": "shm,tcp",
        "tcp_workers": "8", "tcp_lens": "30000", "hosts_workers": "8", "hosts_lens": "30000",
        "tree_workers_min": 2}


def env_opt(name, default=None):
    v = os.environ.get(f"MANYMALLOC_LISTS_{name}")
    return v if v not in (None, "") else default


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="default build")
    p.add_argument("--out", help="default BUILD/bench/dist")
    p.add_argument("--full", action="store_true", default=env_opt("FULL", "0") != "0",
                   help="the full size, for a 16-core host (MANYMALLOC_LISTS_FULL=1)")
    p.add_argument("--workers", default=env_opt("WORKERS"), help="worker counts, comma-separated")
    p.add_argument("--lens", default=env_opt("LENS"), help="list lengths, comma-separated")
    p.add_argument("--schedulers", action="append",
                   help="a MANYMALLOC_SCHEDULERS layout for ours; repeat for several (or SCHEDULERS)")
    p.add_argument("--nets", default=env_opt("NETS"), help="shm, tcp or both, comma-separated")
    p.add_argument("--reps", type=int, default=int(env_opt("REPS", "5")), help="repetitions (default 5)")
    p.add_argument("--impls", default=env_opt("IMPLS", ",".join(IMPLS)), help="comma-separated: " + ", ".join(IMPLS))
    p.add_argument("--timeout", type=int, default=int(env_opt("TIMEOUT", "0")) or None,
                   help="seconds a run may take (default 120, --full 600)")
    p.add_argument("--hostfile", default=env_opt("HOSTFILE"), help="passed to mpirun and oshrun")
    p.add_argument("--mpirun-args", default=env_opt("MPIRUN_ARGS", ""), help="more mpirun/oshrun arguments")
    p.add_argument("--append", action="store_true", help="keep the runs already in OUT and add these")
    p.add_argument("--no-report", action="store_true", help="do not write the report")
    p.add_argument("--dry-run", action="store_true", help="print the runs it would make, and stop")
    a = p.parse_args()
    size = FULL if a.full else SMALL
    a.plan = plan(a, size)
    a.timeout = a.timeout or (600 if a.full else 120)
    a.impls = [i for i in a.impls.split(",") if i]
    bad = [i for i in a.impls if i not in IMPLS]
    if bad:
        p.error(f"unknown --impls {','.join(bad)}")
    return a


def ints(s):
    return sorted({int(x) for x in s.split(",") if x})


def plan(a, size):
    """[(net, workers, len, [scheduler layouts for ours])], in run order."""
    nets = (a.nets or size["nets"]).split(",")
    if a.schedulers is None and env_opt("SCHEDULERS"):   # options replace the environment's list, not extend it
        a.schedulers = env_opt("SCHEDULERS").split()
    scheds = a.schedulers or size["schedulers"]
    cases = []
    for net in nets:
        if net not in NETS:
            raise SystemExit(f"run_lists.py: unknown net {net} (shm, tcp)")
        if net == "hosts" and not os.environ.get("DIST_HOSTS_HOSTFILE"):
            raise SystemExit("run_lists.py: net hosts runs under scripts/dist-hosts --exec, which makes the hosts")
        key = net + "_" if net in ("tcp", "hosts") else ""
        workers, lens = ints(a.workers or size[key + "workers"]), ints(a.lens or size[key + "lens"])
        for length in lens:
            for w in workers:
                mine = [s for s in scheds if tree_fits(s, w)
                        and (s == "1" or a.schedulers or (net != "tcp" and w >= size["tree_workers_min"]))]
                cases.append((net, w, length, mine))
    return cases


def sched_count(layout):
    return sum(int(x) for x in layout.split(","))


def tree_fits(layout, workers):
    """Every leaf scheduler needs a worker."""
    return workers >= int(layout.split(",")[-1])


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

def launcher_argv(launcher, ranks, args):
    tool = shutil.which(launcher)
    if tool is None:
        return None
    argv = [tool, "--oversubscribe", "-np", str(ranks)]
    if launcher == "oshrun":
        argv += ["--mca", "osc", "^rdma"]
    if args.hostfile:
        argv += ["--hostfile", args.hostfile]
    return argv + shlex.split(args.mpirun_args)


def tail(text, n=600):
    text = (text or "").strip()
    return text[-n:]


def run_one(args, build, impl, net, workers, length, layout):
    """One program run: its record, the program's JSON line with the run's
    settings added, or why it was skipped or failed."""
    program, extra, launcher, per_node = IMPLS[impl]
    path = os.path.join(build, program)
    ranks = workers + (sched_count(layout) if layout else 0)
    reps, warmup = (1, 0) if per_node and net != "shm" else (args.reps, 1)
    rec = {"impl": impl, "net": net, "workers": workers, "ranks": ranks, "len": length,
           "cores": os.cpu_count(), "oversubscribed": ranks > (os.cpu_count() or 1)}
    if layout:
        rec["schedulers"] = layout
    label = f"  {impl:12} {net} W={workers} L={length}{' S=' + layout if layout else ''}"
    base = launcher_argv(launcher, ranks, args)
    if not os.path.exists(path) or base is None:
        rec["skipped"] = f"no {launcher}" if base is None else f"no {path} (not built)"
        print(f"{label}: skipped, {rec['skipped']}", flush=True)
        return rec
    env = mpi_env(NETS[net])
    for k in ("MANYMALLOC_SCHEDULERS", "MANYMALLOC_WORKERS_PER_SCHEDULER"):
        env.pop(k, None)
    if layout:
        env["MANYMALLOC_SCHEDULERS"] = layout
    opts = ["--len", str(length), "--reps", str(reps), "--warmup", str(warmup)] + extra
    rec["command"] = " ".join(([f"MANYMALLOC_SCHEDULERS={layout}"] if layout else [])
                              + [os.path.basename(base[0])] + base[1:] + [program, "--out", "DIR"] + opts)
    line = None
    with tempfile.TemporaryDirectory(prefix="lists-") as tmp:
        t0 = time.time()
        try:
            p = subprocess.run(base + [path, "--out", tmp] + opts, env=env, timeout=args.timeout,
                               capture_output=True, text=True)
            status, output = p.returncode, p.stderr + p.stdout
        except subprocess.TimeoutExpired as e:
            status = f"timed out after {args.timeout} s"
            output = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                             for x in (e.stderr, e.stdout))
        rec["wall_s"] = round(time.time() - t0, 3)
        result = os.path.join(tmp, "lists.jsonl")
        if os.path.exists(result):
            with open(result) as f:
                lines = [json.loads(l) for l in f if l.strip()]
            line = lines[-1] if lines else None
    if line is not None:
        rec = dict(line, **rec)
    if status != 0 or line is None or line.get("faults"):
        if isinstance(status, str):
            why = status
        elif status != 0:
            why = f"exit status {status}" + (f" (signal {-status})" if status < 0 else "")
        else:
            why = "nodes failed their checks" if line else "no result written"
        rec["failed"] = why
        rec["output_tail"] = tail(output)
        print(f"{label}: FAILED ({why})", flush=True)
    else:
        print(f"{label}: build {rec['build_s']:.4f} s, exchange {rec['exchange_s']:.4f} s, "
              f"total {rec['total_s']:.4f} s", flush=True)
    return rec


# ---------------------------------------------------------------------------
# What the runs ran on
# ---------------------------------------------------------------------------

def command_output(argv, env=None, timeout=60):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)


def probe(args, build, net):
    """Which transports carry each kind of run under this net, from a tiny
    run with Open MPI's and UCX's verbose output."""
    env = mpi_env(NETS[net])
    env.pop("MANYMALLOC_SCHEDULERS", None)
    found = {}
    verbose = ["--mca", "pml_base_verbose", "10", "--mca", "btl_base_verbose", "10"]
    tiny = ["--out", None, "--len", "8", "--reps", "1", "--warmup", "0"]
    for impl in ("mpi-pack", "ours-alloc", "shmem"):
        program, extra, launcher, _ = IMPLS[impl]
        path = os.path.join(build, program)
        base = launcher_argv(launcher, 3 if impl.startswith("ours") else 2, args)
        if base is None or not os.path.exists(path):
            continue
        if net == "hosts":   # a rank a host, so that the probe crosses hosts
            base += ["--map-by", "node"]
        with tempfile.TemporaryDirectory(prefix="lists-probe-") as tmp:
            tiny[1] = tmp
            penv = dict(env, UCX_LOG_LEVEL="info") if launcher == "oshrun" else env
            status, text = command_output(base + verbose + [path] + tiny + extra, env=penv)
        info = {"exit": status}
        pml = sorted(set(re.findall(r"select: component (\w+) selected", text)))
        btl = sorted(set(re.findall(r"Using (\w+) btl for send to", text)))
        if pml:
            info["pml"] = pml
        if btl:
            info["btl"] = btl
        spml = sorted(set(re.findall(r"mca_spml_base_select\(\) select: component (\w+) selected", text)))
        if spml:
            info["spml"] = spml
        ucx = sorted(set(re.findall(r"ep_cfg\[\d+\]: (rma\w*\([^)]*\))", text)))
        if ucx:
            info["ucx_rma"] = ucx
        found[impl.split("-")[0]] = info
    return found


def hostfile_hosts():
    """The hosts of scripts/dist-hosts' hostfile, when running under it."""
    path = os.environ.get("DIST_HOSTS_HOSTFILE")
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        return [l.split()[0] for l in f if l.strip() and not l.startswith("#")]


def meta(args, build):
    _, version = command_output(["ompi_info", "--version"])
    _, oshmem = command_output(["oshmem_info", "--parsable"]) if shutil.which("oshmem_info") else (None, "")
    m = {
        "mpi_build": version.strip().splitlines()[0] if version.strip() else "unknown",
        "mpirun": shutil.which("mpirun"), "oshrun": shutil.which("oshrun"),
        "oshmem_components": sorted(set(re.findall(r"mca:(spml|sshmem):(\w+):", oshmem))),
        "host": os.uname().nodename, "kernel": os.uname().release, "cores": os.cpu_count(),
        "hostfile": args.hostfile, "mpirun_args": args.mpirun_args, "hosts": hostfile_hosts(),
        "launch": "mpirun/oshrun --oversubscribe -np RANKS (oshrun also --mca osc ^rdma)",
        "env": DEFAULTS, "nets": {n: {"env": NETS[n], "about": NET_ABOUT[n]} for n in sorted({c[0] for c in args.plan})},
        "reps": args.reps, "full": args.full, "timeout_s": args.timeout, "impls": args.impls,
        "node_bytes": 256,
    }
    m["transports"] = {net: probe(args, build, net) for net in m["nets"]}
    return m


def write_meta(path, info, append):
    """lists_meta.json; appending, the nets and transports of this run join
    those of the runs already there."""
    if append and os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        for key in ("nets", "transports"):
            info[key] = dict(old.get(key, {}), **info[key])
        info["wall_s"] = round(old.get("wall_s", 0) + info["wall_s"], 1)
    with open(path, "w") as f:
        json.dump(info, f, indent=1)


def main():
    args = parse_args()
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out or os.path.join(build, "bench", "dist"))
    os.makedirs(out, exist_ok=True)
    if not args.dry_run and not args.append:   # a failed run leaves no earlier run's numbers in the report
        for stale in ("lists.jsonl", "lists_meta.json", "lists.md"):
            if os.path.exists(os.path.join(out, stale)):
                os.remove(os.path.join(out, stale))
    if not shutil.which("mpirun"):
        print("run_lists.py: skipped: no mpirun")
        return 0
    if not os.path.exists(os.path.join(build, "dist-lists")):
        print(f"run_lists.py: skipped: no {build}/dist-lists (build the dist-lists targets)")
        return 0
    if "shmem" in args.impls and not os.path.exists(os.path.join(build, "dist-lists-shmem")):
        print("run_lists.py: the OpenSHMEM peer is not built (no oshcc or pkg-config oshmem found at "
              "configure time); its runs are recorded as skipped")
    if args.dry_run:
        for net, workers, length, layouts in args.plan:
            for impl in args.impls:
                for layout in (layouts if impl.startswith("ours") else [None]):
                    ranks = workers + (sched_count(layout) if layout else 0)
                    print(f"{net} L={length} W={workers} {impl}{' S=' + layout if layout else ''} ({ranks} ranks)")
        return 0
    started = time.time()
    info = meta(args, build)
    print(f"run_lists.py: {info['mpi_build']}, {info['cores']} cores; {len(args.plan)} cases", flush=True)
    records = []
    failed = 0
    for net, workers, length, layouts in args.plan:
        print(f"lists: net {net}, {workers} workers, L = {length}", flush=True)
        for impl in args.impls:
            for layout in (layouts if impl.startswith("ours") else [None]):
                rec = run_one(args, build, impl, net, workers, length, layout)
                records.append(rec)
                # A peer's failure (OpenSHMEM's crashes) is a result; ours is a failure.
                failed += impl.startswith("ours") and "failed" in rec
    info["wall_s"] = round(time.time() - started, 1)
    with open(os.path.join(out, "lists.jsonl"), "a" if args.append else "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    write_meta(os.path.join(out, "lists_meta.json"), info, args.append)
    print(f"run_lists.py: {len(records)} runs in {info['wall_s']} s; wrote {out}/lists.jsonl and lists_meta.json",
          flush=True)
    if not args.no_report:
        failed += not report(out)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
