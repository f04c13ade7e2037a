#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/report/test_report.py: bench/report/main.py on the small results
under bench/report/fixtures/ (a part a folder, cut from committed runs and
made up where a case must show: a capped case, a failed child, NULLs, bad
blocks). Each part's section must show what its results hold, judge the
issues' figures by the numbers, draw its plots and link them where they
are. No MPI, no GPU; a copy of the fixtures is written to, never the tree."""
import os
import re
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from report import main  # noqa: E402


def generate(*argv):
    """main.main(argv) quietly: (exit status, what it printed)."""
    printed = StringIO()
    with redirect_stdout(printed), redirect_stderr(printed):
        status = main.main(list(argv))
    return status, printed.getvalue()


def copy_fixtures():
    folder = tempfile.mkdtemp(prefix="report-test-")
    for part in ("cpu", "gpu", "dist"):
        shutil.copytree(os.path.join(HERE, "fixtures", part), os.path.join(folder, part))
    return folder


class Report(unittest.TestCase):
    """Reading what the generator wrote into self.dir."""

    def report(self, folder=None):
        with open(os.path.join(folder or self.dir, "report.md")) as f:
            return f.read()

    def line(self, label, folder=None):
        return next(l for l in self.report(folder).splitlines() if l.startswith("| " + label))

    def assert_images_drawn(self, folder, names):
        """Every plot named is drawn, and every image report.md links is there."""
        for name in names:
            self.assertGreater(os.path.getsize(os.path.join(self.dir, name)), 0, name)
        for link in re.findall(r"!\[[^]]*\]\(([^)]+)\)", self.report(folder)):
            self.assertTrue(os.path.exists(os.path.join(folder or self.dir, link)), link)


class Whole(Report):
    """The whole report of the fixtures, as make bench writes it: generated
    once for every class below that reads it."""
    made = {}

    @classmethod
    def setUpClass(cls):
        if not Whole.made:
            folder = copy_fixtures()
            status, printed = generate("--dir", folder)
            Whole.made.update(dir=folder, status=status, printed=printed)
        cls.dir, cls.status, cls.printed = Whole.made["dir"], Whole.made["status"], Whole.made["printed"]


class EveryPart(Whole):
    def test_sections_in_order(self):
        text = self.report()
        heads = [text.index(h) for h in ("## CPU", "## GPU", "## dist")]
        self.assertEqual(heads, sorted(heads))
        self.assertEqual(self.status, 0)

    def test_links_into_the_parts_folders(self):
        self.assert_images_drawn(None, ["cpu/time_vs_threads.png", "gpu/bench.png", "dist/load.png"])
        self.assertIn("](cpu/peak_rss.png)", self.report())

    def test_each_part_prints_its_checks(self):
        for part in ("cpu:", "gpu:", "dist:"):
            self.assertIn(part, self.printed.splitlines())


class Cpu(Whole):
    """What the CPU section of the whole report shows."""

    def test_tables_and_headlines(self):
        text = self.report(None)
        for head in ("## CPU", "### Machine", "### Headline figures", "### Time", "### Peak RSS",
                     "### Trace set"):
            self.assertIn(head, text)
        self.assertIn("Time at 2 threads, geometric mean over the bench set, manymalloc / glibc: **", text)
        # w1 at 1 thread, the medians of three repetitions: manymalloc, glibc, mimalloc.
        self.assertIn("| w1 | 1 | 0.272s | 0.364s (1.34) | 0.245s (0.90) |", text)
        self.assertIn("Losses (more than 10% slower than the fastest peer): w1 at 1T", text)

    def test_plots(self):
        self.assert_images_drawn(None, ["cpu/time_vs_threads.png", "cpu/speedup_vs_glibc.png",
                                                     "cpu/peak_rss.png", "cpu/traces.png"])


class Gpu(Report):
    """The GPU section alone, as scripts/gpu-check writes it into its folder."""

    @classmethod
    def setUpClass(cls):
        cls.dir = copy_fixtures()
        cls.status, cls.printed = generate("--gpu", os.path.join(cls.dir, "gpu"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def goal(self, label):
        return self.line(label, f"{self.dir}/gpu")

    def test_goals_judged_by_the_numbers(self):
        self.assertIn("| yes |", self.goal("MilThreads 8 B, 32 lanes"), "0.05 ns meets <= 0.065")
        self.assertIn("| NO |", self.goal("MilThreads 8 B, 8 lanes"), "0.5 ns misses <= 0.19")

    def test_cases_show_what_went_wrong(self):
        text = self.report(f"{self.dir}/gpu")
        self.assertIn("test device", text, "the device line from the CSV header")
        self.assertIn("source: test commit", text, "a header line written after the rows")
        self.assertIn("(2 runs)", self.goal("MilThreads 8 B, 32 lanes"), "a capped case says so")
        self.assertIn("3 NULL", self.goal("alloc-all 16 B"), "NULLs are shown")
        self.assertIn("timeout", self.goal("alloc-all 1 KiB"), "a timed-out child is shown")
        self.assertIn("7 BAD", text, "bad blocks are shown")
        self.assertNotIn("100 NULL", text, "NULLs are the point of the fill benchmark")
        self.assertIn("| 12 |", text, "the steady alloc-all row")
        self.assertIn("| manymalloc | 812 |", text, "the graph's rates")
        self.assertIn("97.5", text, "the graph's heap held")
        self.assertIn("3.5 (1 run)", text, "a capped graph case says so")

    def test_other_allocators_csv_merged(self):
        cell = self.goal("MilThreads 32 lanes")
        self.assertTrue("| 2x |" in cell and "| 1.17x |" in cell and cell.endswith("| NO |"),
                        "Gallatin's cell: 2x fresh, 1.17x steady, so the 1.5x goal is missed")
        self.assertIn("gallatin.csv: Gallatin at test commit", self.report(f"{self.dir}/gpu"))
        self.assertIn("| MilThreads 32 lanes | 0.05 | 0.1 |", self.printed, "the Gallatin table is printed")

    def test_plots(self):
        self.assert_images_drawn(f"{self.dir}/gpu", ["gpu/bench.png", "gpu/vs_gallatin.png"])


class Dist(Whole):
    """What the dist section of the whole report shows."""

    def test_every_subsection(self):
        text = self.report()
        for head in ("### Fragmentation", "### Latency", "### One scheduler under load",
                     "### One scheduler against a tree", "### Barnes-Hut N-body", "### Delaunay triangulation",
                     "### Linked-list exchange", "### Migrating shards"):
            self.assertIn(head, text)

    def test_goals_judged_by_the_numbers(self):
        printed = self.printed
        self.assertIn("partial slabs < 5% of full slabs (max over the second half): **met** (0.70%", printed)
        self.assertIn("schedulers 1: >= 5x faster than one worker: **NOT met** (4.80x", printed)
        self.assertIn("schedulers 1,2: >= 5x faster than one worker: **met** (5.09x", printed)
        self.assertIn("4 namespace hosts, 8 workers, L = 30000: >= 50x faster than per-node OpenSHMEM: **met**",
                      printed)
        self.assertIn("shard migration, 2w: first correct lookup on the receiver >= 2x faster than pack/rebuild: "
                      "**NOT met** (0.09x)", printed)

    def test_tables(self):
        folder = None
        self.assertRegex(self.line("remote | 1,4 (5 in 2 levels)", folder), r"\| 2\.\d\dx \|",
                         "the tree against one scheduler")
        self.assertIn("| 1000000 | local | 1 | 16 | round 2 | 16 |", self.report(folder), "a Delaunay phase row")

    def test_plots(self):
        self.assert_images_drawn(None, [f"dist/{n}.png" for n in (
            "frag_a", "load", "tree", "nbody", "delaunay", "lists_hosts", "shards")])


class DistAlone(unittest.TestCase):
    """The dist section from one driver's results, as its smoke test or a run
    of that driver alone writes it."""

    def test_failed_check(self):
        """A run whose correctness check failed makes the generator exit 1,
        and its row says so."""
        folder = tempfile.mkdtemp(prefix="report-test-")
        try:
            with open(os.path.join(HERE, "fixtures", "dist", "delaunay.jsonl")) as f:
                first = f.readline().replace('"passed": true', '"passed": false')
            with open(os.path.join(folder, "delaunay.jsonl"), "w") as f:
                f.write(first)
            status, _ = generate("--dist", folder)
            self.assertEqual(status, 1)
            with open(os.path.join(folder, "report.md")) as f:
                self.assertIn("**FAILED**", f.read())
            self.assertFalse(os.path.exists(os.path.join(folder, "load.png")), "no plot without its results")
        finally:
            shutil.rmtree(folder)

    def test_lists_run_twice_under_one_name(self):
        """A net run again with the same settings (run_lists.py --append)
        gives two runs of one name and worker count: both are tabled."""
        folder = tempfile.mkdtemp(prefix="report-test-")
        try:
            with open(os.path.join(HERE, "fixtures", "dist", "lists.jsonl")) as f:
                first = f.readline()
            with open(os.path.join(folder, "lists.jsonl"), "w") as f:
                f.write(first + first)
            self.assertEqual(generate("--dist", folder)[0], 0)
            self.assertTrue(os.path.exists(os.path.join(folder, "lists_hosts.png")))
        finally:
            shutil.rmtree(folder)

    def test_nothing_to_report(self):
        folder = tempfile.mkdtemp(prefix="report-test-")
        try:
            self.assertEqual(generate("--dir", folder)[0], 1)
        finally:
            shutil.rmtree(folder)


def tearDownModule():
    if Whole.made:
        shutil.rmtree(Whole.made["dir"])


if __name__ == "__main__":
    unittest.main()
