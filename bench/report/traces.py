# SPDX-License-Identifier: Apache-2.0
"""The trace set (every .rep under bench/traces/) replayed by build/mmdriver.

With one thread mmdriver reports, per trace, utilization (peak live bytes /
peak footprint growth) and throughput; with -t N, N threads replay each trace
at once and the throughput is their aggregate. mmdriver names the allocator
serving it on stderr, which is checked like the benchmark programs' label.
"""
import csv
import glob
import io
import os
import re

from report import allocators, runner


def find(repo):
    return sorted(glob.glob(os.path.join(repo, "bench", "traces", "**", "*.rep"), recursive=True))


def run(build_dir, alloc, threads, reps, trace_files, repo):
    """One mmdriver invocation over the whole set; returns one dict per trace,
    or a single failure record."""
    # mmdriver measures every allocator's footprint the same way (resident anonymous memory),
    # so utilization compares like with like.
    argv = [os.path.join(build_dir, "mmdriver"), "-t", str(threads), "-r", str(reps), "-f", "csv"] + trace_files
    status, out, err, wall, rss = runner.run(argv, alloc.path)
    m = re.search(r"mmdriver: allocator (\S+), footprint by ([^,]+),", err)
    allocators.check_label(alloc, m.group(1) if m else None, f"mmdriver -t {threads}")
    rows = []
    for row in csv.DictReader(io.StringIO(out)):
        rows.append({
            "allocator": alloc.name, "threads": threads, "footprint_by": m.group(2),
            "trace": os.path.relpath(row["trace"], repo), "ops": int(row["ops"]), "valid": row["valid"] == "1",
            "util": float(row["util"]) if row["util"] else None,
            "kops": float(row["kops"]) if row["kops"] else None,
            "first_kops": float(row["first_kops"]) if row.get("first_kops") else None,
        })
    if status != 0 and not any(not r["valid"] for r in rows):
        rows.append({"allocator": alloc.name, "threads": threads, "trace": None, "valid": False,
                     "error": runner.describe_failure(status, err)})
    return rows
