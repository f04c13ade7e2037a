#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes report.md from what the benchmark runs of every part wrote, with
their PNG plots: a CPU section (bench/run.py's results.json), a GPU section
(scripts/gpu-check's results.csv, and any other allocator's CSV beside it)
and a dist section (bench/dist/run.py's JSON, JSONL and CSV files).

    python3 bench/report/main.py [--dir DIR] [--cpu D] [--gpu D] [--dist D] [--out D]

--dir DIR (default build/bench): the parts' folders are DIR/cpu, DIR/gpu and
DIR/dist, and report.md goes to DIR. --cpu, --gpu and --dist name a part's
folder elsewhere; given any of them, only the parts named are reported, and
report.md goes to --out (default: the folder of the one part named, else
DIR). A part whose folder holds no results is left out. Each plot is drawn
into its part's folder and linked from report.md. Prints each part's
checks, the issues' figures met or NOT met; exits 1 where a correctness
check that a run recorded failed, or where no part had results.
"""
import argparse
import os
import sys

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BENCH)

from report import cpu, dist, gpu  # noqa: E402
from report.document import Part  # noqa: E402

SECTIONS = {"cpu": cpu, "gpu": gpu, "dist": dist}   # in the order report.md shows them


def link(folder, out):
    """A part's folder as report.md in `out` links it: '' when the same."""
    rel = os.path.relpath(folder, out)
    return "" if rel == "." else rel


def generate(folders, out):
    """report.md in `out` from the parts' folders ({part: folder}); the
    sections written, with their checks and failures."""
    os.makedirs(out, exist_ok=True)
    sections = {}
    for name, module in SECTIONS.items():
        if name in folders and os.path.isdir(folders[name]):
            s = module.section(Part(folders[name], link(folders[name], out), 2))
            if s:
                sections[name] = s
    lines = ["# manymalloc benchmarks", "",
             "Written by `bench/report/main.py` from the results of: "
             + (", ".join(f"{n} (`{link(folders[n], out) or '.'}/`)" for n in sections) or "no part") + ".", ""]
    for s in sections.values():
        lines += s.lines
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines).rstrip("\n") + "\n")
    return sections


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", default=os.path.join(os.path.dirname(BENCH), "build", "bench"),
                   help="holds cpu/, gpu/ and dist/; report.md goes there (default build/bench)")
    for name in SECTIONS:
        p.add_argument(f"--{name}", help=f"the {name} part's folder (only the parts named are reported)")
    p.add_argument("--out", help="where report.md goes")
    args = p.parse_args(argv)
    named = {n: os.path.abspath(getattr(args, n)) for n in SECTIONS if getattr(args, n)}
    folders = named or {n: os.path.join(os.path.abspath(args.dir), n) for n in SECTIONS}
    out = os.path.abspath(args.out or (next(iter(named.values())) if len(named) == 1 else args.dir))
    sections = generate(folders, out)
    for name, s in sections.items():
        if s.checks:
            print(f"{name}:", *s.checks, sep="\n")
    failed = [f for s in sections.values() for f in s.failed]
    for f in failed:
        print(f"report: FAILED check: {f}", file=sys.stderr)
    print(f"report: wrote {out}/report.md ({', '.join(sections) or 'no results found'})")
    return 1 if failed or not sections else 0


if __name__ == "__main__":
    sys.exit(main())
