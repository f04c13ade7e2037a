# SPDX-License-Identifier: Apache-2.0
"""The CPU benchmark cases: which program, with which arguments.

`work` holds the arguments that set how much work a run does; --quick and
--smoke scale them down. The VVMalloc report's op counts (128k and 80k per
thread) take about 2 ms on a current core, too short to time, so the full
run does 100 times as many.
"""
from dataclasses import dataclass, field


@dataclass
class Case:
    name: str
    program: str                                # build/<program>
    about: str
    args: dict = field(default_factory=dict)    # fixed arguments
    work: dict = field(default_factory=dict)    # scaled by the mode
    oversubscribe: int = 1                      # threads run per thread of the sweep
    threads_per: int = 1                        # OS threads per thread counted (2: producer/consumer pairs)

    def os_threads(self, threads):
        """The threads the process runs, which --pin gives a CPU each."""
        return threads * self.oversubscribe * self.threads_per

    def command(self, build_dir, threads, scale):
        argv = [f"{build_dir}/{self.program}", "-v", "--threads", str(threads * self.oversubscribe)]
        for k, v in self.args.items():
            argv += [f"--{k}", str(v)]
        for k, v in self.work.items():
            argv += [f"--{k}", str(max(1, int(v * scale)))]
        return argv


CASES = [
    Case("w1", "bench-vv", "VVMalloc W1: 12.8M ops/thread, mostly < 32 B",
         {"workload": 1}, {"ops": 128000 * 100}),
    Case("w2", "bench-vv", "VVMalloc W2: 8M ops/thread, mostly 3-12 KB",
         {"workload": 2}, {"ops": 80000 * 100}),
    Case("w3", "bench-vv", "VVMalloc W3: 8M ops/thread, 4 B-21 KB mix",
         {"workload": 3}, {"ops": 80000 * 100}),
    Case("churn", "bench-churn", "server churn: 30 rounds of 1M free+malloc/thread, 8-1000 B, half the live blocks change threads each round",
         {"rounds": 30, "slots": 1000, "handoff": 50, "min": 8, "max": 1000}, {"ops": 1000000}),
    Case("prodcons", "bench-prodcons", "producer/consumer pairs (threads = pairs), 8M blocks of 16-512 B per pair, all frees remote",
         {"min": 16, "max": 512}, {"ops": 8000000}, threads_per=2),
    Case("xmalloc", "bench-xmalloc", "many-to-many: 20M blocks/thread of 16-1024 B in batches of 64, allocated by any thread, freed by any other",
         {"min": 16, "max": 1024}, {"ops": 20000000}),
    Case("scratch", "bench-scratch", "passive false sharing: 20000 x (malloc 8 B, 5000 writes, free) per worker, first object from the main thread",
         {"size": 8, "writes": 5000}, {"iters": 20000}),
    Case("spawn", "bench-spawn", "short-lived threads: 2000 generations of threads, each 2000 blocks of 16-2048 B, half freed by the next generation",
         {"burst": 2000, "min": 16, "max": 2048}, {"generations": 2000}),
    Case("stream", "bench-prodcons", "streaming producer/consumer pairs (threads = pairs): 8M blocks of 8-256 B per pair handed over one at a time, freed at once",
         {"batch": 1, "ring": 1024, "min": 8, "max": 256}, {"ops": 8000000}, threads_per=2),
    Case("stress", "bench-stress", "threads that come and go: 20 lives of ~200k steps per thread slot, 16 B-64 KiB, 1 step in 16 swaps a block with a shared table",
         {"lives": 20, "slots": 500, "share": 16}, {"ops": 200000}),
    Case("stress2x", "bench-stress", "the stress case with twice as many threads as the sweep's count (oversubscribed at the top)",
         {"lives": 20, "slots": 500, "share": 16}, {"ops": 100000}, oversubscribe=2),
    Case("octree", "bench-octree", "Barnes-Hut: 10000 bodies per thread, an octree of malloc'd cells built, walked and freed at each of 10 steps",
         {"bodies": 10000}, {"steps": 10}),
    Case("simple", "bench-simple", "glibc-style loops: batches of 25-1600 blocks of 16-256 B allocated then freed, 2000 times each",
         {}, {"iters": 2000}),
    Case("mixed", "bench-mixed", "mixed sizes 8 B-64 KiB log-uniform over 2000 live blocks, 1 step in 8 a realloc, 4M steps per thread",
         {"slots": 2000, "realloc": 8}, {"ops": 4000000}),
    Case("large", "bench-large", "big buffers: 20 live blocks of 5-25 MiB per thread, one replaced at a time and written through, 500 times",
         {"slots": 20, "min": 5 << 20, "max": 25 << 20}, {"iters": 500}),
    Case("bigpair", "bench-large", "big blocks malloc'd and freed in turn: one live block of 1-32 MiB per thread, replaced 300 times, written through",
         {"slots": 1, "min": 1 << 20, "max": 32 << 20}, {"iters": 300}),
]

TRACES = "traces"   # the name --only matches for the mmdriver trace set
