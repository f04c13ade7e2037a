#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/gpu/test_report.py: report.py on a small results file holding each
kind of row (a result, a capped case, a failed child, NULLs, bad blocks) must
show each one, judge the goals by the numbers, and write the plot."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = "bench,alloc,config,param,metric,value,unit,reps,nulls,bad,status,note"


def run_report(rows):
    out = tempfile.mkdtemp()
    path = os.path.join(out, "results.csv")
    with open(path, "w") as f:
        f.write("# device: test device\n" + HEADER + "\n" + "\n".join(rows) + "\n")
    subprocess.run([sys.executable, os.path.join(HERE, "report.py"), "--out", out, path],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "report.md")) as f:
        return f.read(), out


def goal_line(report, label):
    return next(l for l in report.splitlines() if l.startswith("| " + label))


def main():
    report, out = run_report([
        "milthreads,xmc,default,32,ns_per_pair,0.05,ns,5,0,0,ok,",
        "milthreads,xmc,default,8,ns_per_pair,0.5,ns,5,0,0,ok,",
        "milthreads,cuda,default,32,ns_per_pair,400,ns,2,0,0,capped,",
        "alloc_all,xmc,default,16,alloc_gops,20,G/s,5,3,0,ok,",
        "alloc_all,cuda,default,1024,-,nan,,0,0,0,timeout,no result in time",
        "churn,xmc,default,0,churn_gops,1,G/s,5,0,7,ok,",
        "fill,xmc,default,16,heap_fraction,0.9,,1,100,0,ok,",
        "milthreads,xmc,default,32,ns_per_pair_steady,0.06,ns,5,0,0,ok,",
        "milthreads,gallatin,default,32,ns_per_pair,0.1,ns,5,0,0,ok,",
        "milthreads,gallatin,default,32,ns_per_pair_steady,0.07,ns,5,0,0,ok,",
        "alloc_all,xmc,default,16,alloc_gops_steady,12,G/s,5,0,0,ok,",
        "graph,xmc,default,0,insert_medges,812,M/s,5,0,0,ok,",
        "graph,xmc,default,0,held_mib_inserted,97.5,MiB,6,0,0,ok,",
        "graph,cuda,default,0,insert_medges,3.5,M/s,1,0,0,capped,",
    ])
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    expect("test device" in report, "the device line from the CSV header")
    expect("| yes |" in goal_line(report, "MilThreads 8 B, 32 lanes"), "0.05 ns meets <= 0.065")
    expect("| NO |" in goal_line(report, "MilThreads 8 B, 8 lanes"), "0.5 ns misses <= 0.19")
    expect("(2 runs)" in goal_line(report, "MilThreads 8 B, 32 lanes"), "a capped case says so")
    expect("3 NULL" in goal_line(report, "alloc-all 16 B"), "NULLs are shown")
    expect("timeout" in goal_line(report, "alloc-all 1 KiB"), "a timed-out child is shown")
    expect("7 BAD" in report, "bad blocks are shown")
    expect("100 NULL" not in report, "NULLs are the point of the fill benchmark")
    expect(os.path.getsize(os.path.join(out, "bench.png")) > 0, "the plot is written")
    cell = goal_line(report, "MilThreads 32 lanes")
    expect("| 2x |" in cell and "| 1.17x |" in cell and cell.endswith("| NO |"),
           "Gallatin's cell: 2x fresh, 1.17x steady, so the 1.5x goal is missed")
    expect("| 12 |" in report, "the steady alloc-all row")
    expect("| manymalloc | 812 |" in report and "97.5" in report, "the graph's rates and heap held")
    expect("3.5 (1 run)" in report, "a capped graph case says so")
    expect(os.path.getsize(os.path.join(out, "vs_gallatin.png")) > 0, "the per-cell plot is written")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
