# SPDX-License-Identifier: Apache-2.0
"""Runs one benchmark process and measures it from the outside, and says
what machine it ran on.

The program reports the time of its measured region (seconds=) and the
high-water mark of its resident set (peak_rss_kib=, VmHWM). The harness adds
the process's wall time and the kernel's ru_maxrss from os.wait4, kept in
results.json as a cross-check: Linux carries a child's resident set from
fork to exec into ru_maxrss, so there it never reads below the harness's own
size (~17 MiB), which would hide the small footprints being compared.
"""
import datetime
import os
import platform
import re
import subprocess
import tempfile
import threading
import time

TIMEOUT_S = 300   # a hung allocator must not hang `make bench`


def pinned_cpus(threads, rep):
    """The CPUs a repetition's processes run on under --pin: a window of
    `threads` of the harness's CPUs that moves by `threads` each repetition,
    so the repetitions cover the machine's cores and every allocator of one
    repetition runs on the same ones (on a host whose cores differ in speed,
    a comparison otherwise measures which cores each allocator landed on).
    None (no pinning) when the threads outnumber the CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    if threads > len(cpus):
        return None
    start = rep * threads % len(cpus)
    return {cpus[(start + i) % len(cpus)] for i in range(threads)}


def run(argv, preload, timeout=TIMEOUT_S, cpus=None):
    """Returns (exit status, stdout, stderr, wall seconds, ru_maxrss in KiB).
    With `cpus`, the process runs on those CPUs only."""
    env = dict(os.environ, LD_PRELOAD=preload)
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env, preexec_fn=pin)
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)   # reaped here, not by Popen
        proc.stdout.close()
        err.seek(0)
        return proc.returncode, out.decode(errors="replace"), err.read().decode(errors="replace"), wall, usage.ru_maxrss


def parse_result(stdout):
    """The `bench=... seconds=... allocator=...` line as a dict, or None."""
    for line in stdout.splitlines():
        if line.startswith("bench="):
            return dict(re.findall(r"(\w+)=(\S+)", line))
    return None


def describe_failure(status, stderr):
    why = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
    tail = stderr.strip().splitlines()[-3:]
    return why + (": " + " | ".join(tail) if tail else "")


def machine():
    """The machine the runs ran on, for the report's first lines."""
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    fields = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
    return {
        "cpu": fields.get("Model name", "unknown").strip(),
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "loadavg": os.getloadavg()[0],
        "nice": os.nice(0),
    }
