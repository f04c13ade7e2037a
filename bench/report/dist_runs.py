# SPDX-License-Identifier: Apache-2.0
"""What the dist drivers' result files hold, read the same way for every
subsection: the JSON lines a program appends, the last or the median run of
each configuration, the 1-worker run that a speedup is against, and the
host the runs were launched on."""
import json
import os

# The two ways a worker allocates, as every dist driver names them.
MODES = [("remote", "MANYMALLOC_DIST_LEASE=0: every call a round trip"),
         ("local", "default: 64 B objects from leased slabs")]


def read_jsonl(path):
    """The records of a file of JSON lines; [] when it is not there."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def latest_runs(path, key):
    """The last run of each configuration (key(r)): a driver run again
    appends, and the newer run counts."""
    return list({key(r): r for r in read_jsonl(path)}.values())


def median_runs(path, key, field, more=None):
    """Of the runs of one configuration (key(r), layout, workers), the median
    by `field` (the lower of the middle two), with "repeats" (how many ran),
    "<field>_range" (the fastest and slowest) and "all_passed" (every run's
    check); more(median, runs), where given, adds what else it needs."""
    every = {}
    for r in read_jsonl(path):
        every.setdefault(key(r) + (r["layout"], r["workers"]), []).append(r)
    runs = []
    for rs in every.values():
        rs.sort(key=lambda r: r[field])
        r = dict(rs[(len(rs) - 1) // 2])
        r["repeats"] = len(rs)
        r[field + "_range"] = (rs[0][field], rs[-1][field])
        r["all_passed"] = all(x["check"]["passed"] for x in rs)
        if more:
            more(r, rs)
        runs.append(r)
    return runs


def baseline(runs, r, key):
    """The 1-worker, one-scheduler run of r's configuration, or None."""
    return next((b for b in runs if key(b) == key(r) and b["workers"] == 1 and b["layout"] == "1"), None)


def launched():
    """How the drivers launch, said at the end of a subsection's method: the
    timings of a host below the issue's 16 cores are not its figures."""
    cores = os.cpu_count()
    return (f"mpirun --oversubscribe on a host of {cores} cores"
            + (" (oversubscribed: timings are not the issue's figures)" if cores and cores < 16 else "") + ".")
