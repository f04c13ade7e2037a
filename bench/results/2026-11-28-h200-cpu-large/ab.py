#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A/B of libmanymalloc.so builds over the bench set, interleaved.

    python3 ab.py --bench BUILD --threads 1,16 --scale 0.05 --reps 5 NAME=LIB.so NAME=LIB.so ...

Runs every case of bench/report/cases.py with the bench programs of BUILD
under each LD_PRELOAD in turn: within a repetition every build runs each
case back to back on the same pinned CPUs (the order rotated by
repetition), so machine noise hits them alike. Prints the median seconds
and peak RSS per case and build, and each build's ratio to the first;
writes every run to --json.
"""
import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
from report import cases, runner  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bench", required=True, help="build folder with the bench programs")
    p.add_argument("--threads", default="1,16")
    p.add_argument("--scale", type=float, default=0.05)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--json")
    p.add_argument("builds", nargs="+", help="NAME=path/to/libmanymalloc.so")
    args = p.parse_args()
    builds = [b.split("=", 1) for b in args.builds]
    threads = [int(t) for t in args.threads.split(",")]
    runs = []
    for rep in range(args.reps):
        order = builds[rep % len(builds):] + builds[:rep % len(builds)]
        for case in cases.CASES:
            for t in threads:
                cpus = runner.pinned_cpus(case.os_threads(t), rep)
                for name, lib in order:
                    status, out, err, _, _ = runner.run(case.command(args.bench, t, args.scale), lib, cpus=cpus)
                    res = runner.parse_result(out)
                    path = res.get("allocator", "") if res else ""
                    if status != 0 or not os.path.exists(path) or not os.path.samefile(path, lib):
                        print(f"{case.name} {t}T {name}: FAILED {runner.describe_failure(status, err)}", flush=True)
                        continue
                    runs.append({"case": case.name, "threads": t, "build": name, "rep": rep,
                                 "seconds": float(res["seconds"]), "rss_kib": int(res["peak_rss_kib"])})
        print(f"rep {rep + 1}/{args.reps} done", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": threads, "scale": args.scale, "reps": args.reps, "builds": builds, "runs": runs}, f,
                      indent=1)
    names = [n for n, _ in builds]

    def med(case, t, name, key):
        v = [r[key] for r in runs if (r["case"], r["threads"], r["build"]) == (case, t, name)]
        return statistics.median(v) if v else float("nan")

    head = f"{'case':9} {'T':>3} " + " ".join(f"{n + ' s':>12} {'RSS MiB':>8}" for n in names)
    print(head + "  " + " ".join(f"{n + '/' + names[0]:>14}" for n in names[1:]))
    logs = {n: {"time": [], "rss": []} for n in names[1:]}
    for case in cases.CASES:
        for t in threads:
            cells = " ".join(f"{med(case.name, t, n, 'seconds'):12.4f} {med(case.name, t, n, 'rss_kib') / 1024:8.1f}"
                             for n in names)
            base_s, base_r = med(case.name, t, names[0], "seconds"), med(case.name, t, names[0], "rss_kib")
            ratios = []
            for n in names[1:]:
                rs, rr = med(case.name, t, n, "seconds") / base_s, med(case.name, t, n, "rss_kib") / base_r
                logs[n]["time"].append(math.log(rs))
                logs[n]["rss"].append(math.log(rr))
                ratios.append(f"{rs:6.2f} {rr:6.2f}")
            print(f"{case.name:9} {t:3} {cells}  " + " ".join(f"{x:>14}" for x in ratios))
    for n in names[1:]:
        print(f"geometric mean, {n} / {names[0]}: time {math.exp(statistics.mean(logs[n]['time'])):.3f}, "
              f"peak RSS {math.exp(statistics.mean(logs[n]['rss'])):.3f}")


if __name__ == "__main__":
    main()
