#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Synthetic malloc-lab traces: power-law mixes of arrays, structs and strings.

The CMU 15-213 malloc lab shipped syn-array, syn-struct, syn-string and
syn-mix traces; we do not have them, so this generator writes traces of the
same shape, deterministically (same seed, same bytes):

  syn-array        large arrays of variable size (bounded power law, 64 B - 512 KiB)
  syn-struct       small fixed-size records: a dozen struct sizes, Zipf-popular
  syn-string       short strings of variable length (bounded power law, 2 B - 1 KiB)
  syn-mix          all three kinds interleaved
  syn-mix-realloc  the mix where arrays and strings grow by realloc as they live

Every block gets a lifetime (in allocations) from a power law, so most die
young and a few live long; the requests interleave as the blocks are born,
grow and die, and everything still live is freed at the end. Ids are reused
through a free list, as build/mmtrace.so does, so num_ids tracks the peak
number of live blocks.

  tools/gen-synthetic.py --out bench/traces            # all five
  tools/gen-synthetic.py --out /tmp --allocs 5000 syn-mix
"""
import argparse
import heapq
import os
import random
import zlib

KINDS = ("syn-array", "syn-struct", "syn-string", "syn-mix", "syn-mix-realloc")
STRUCT_SIZES = (16, 24, 32, 40, 48, 56, 64, 72, 96, 128, 160, 224)
# Zipf over the struct types: the k-th most popular has weight 1/k.
STRUCT_WEIGHTS = tuple(1.0 / (k + 1) for k in range(len(STRUCT_SIZES)))


def power_law(rng, lo, hi, alpha):
    """A value in [lo, hi] with density proportional to x^-alpha (alpha != 1)."""
    e = 1.0 - alpha
    u = rng.random()
    return int((lo ** e + u * (hi ** e - lo ** e)) ** (1.0 / e))


def array_size(rng):
    elem = rng.choice((4, 8, 8, 16))
    return max(elem, power_law(rng, 64, 512 << 10, 1.5) // elem * elem)


def struct_size(rng):
    return rng.choices(STRUCT_SIZES, STRUCT_WEIGHTS)[0]


def string_size(rng):
    return power_law(rng, 2, 1024, 1.5)


SIZERS = {"array": array_size, "struct": struct_size, "string": string_size}
KIND_MIX = {
    "syn-array": ("array",),
    "syn-struct": ("struct",),
    "syn-string": ("string",),
    "syn-mix": ("array", "struct", "struct", "string", "string"),
    "syn-mix-realloc": ("array", "struct", "string", "string"),
}


class Trace:
    """Requests with id reuse and the header counts."""

    def __init__(self):
        self.lines, self.free_ids, self.sizes = [], [], {}
        self.num_ids = self.live = self.peak = 0

    def alloc(self, size):
        bid = self.free_ids.pop() if self.free_ids else self.num_ids
        self.num_ids = max(self.num_ids, bid + 1)
        self.lines.append(f"a {bid} {size}")
        self._resize(bid, size)
        return bid

    def realloc(self, bid, size):
        self.lines.append(f"r {bid} {size}")
        self._resize(bid, size)

    def free(self, bid):
        self.lines.append(f"f {bid}")
        self.live -= self.sizes.pop(bid)
        self.free_ids.append(bid)

    def _resize(self, bid, size):
        self.live += size - self.sizes.get(bid, 0)
        self.sizes[bid] = size
        self.peak = max(self.peak, self.live)

    def text(self):
        head = [self.peak, self.num_ids, len(self.lines), 1]
        return "".join(f"{v}\n" for v in head) + "\n".join(self.lines) + "\n"


def generate(kind, allocs, seed):
    """Events are (time, seq, action, block) in a heap; time counts allocations."""
    rng = random.Random(seed ^ zlib.crc32(kind.encode()))
    trace, events, seq = Trace(), [], 0
    grows = kind == "syn-mix-realloc"
    for now in range(allocs):
        while events and events[0][0] <= now:
            _, _, action, block = heapq.heappop(events)
            if action == "free":
                trace.free(block["id"])
            else:
                block["size"] = max(block["size"] + 1, int(block["size"] * rng.uniform(1.2, 2.0)))
                trace.realloc(block["id"], block["size"])
        sort = rng.choice(KIND_MIX[kind])
        size = SIZERS[sort](rng)
        block = {"id": trace.alloc(size), "size": size}
        life = power_law(rng, 1, 4 * allocs, 1.1)
        if grows and sort != "struct":
            for k in range(rng.randint(1, 6)):
                seq += 1
                heapq.heappush(events, (now + life * (k + 1) / 8, seq, "grow", block))
        seq += 1
        heapq.heappush(events, (now + life, seq, "free", block))
    for _, _, action, block in sorted(events):
        if action == "free":
            trace.free(block["id"])
    return trace


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kinds", nargs="*", metavar="KIND", help="traces to write: " + ", ".join(KINDS) + " (default: all)")
    ap.add_argument("--out", default=".", help="directory for KIND.rep (default .)")
    ap.add_argument("--allocs", type=int, default=20000, help="allocations per trace (default 20000)")
    ap.add_argument("--seed", type=int, default=15213, help="random seed (default 15213)")
    args = ap.parse_args()
    for kind in args.kinds:
        if kind not in KINDS:
            ap.error(f"unknown trace kind {kind}")
    os.makedirs(args.out, exist_ok=True)
    for kind in args.kinds or KINDS:
        trace = generate(kind, args.allocs, args.seed)
        path = os.path.join(args.out, kind + ".rep")
        with open(path, "w") as f:
            f.write(trace.text())
        print(f"{path}: {len(trace.lines)} requests, {trace.num_ids} ids, peak live {trace.peak} bytes")


if __name__ == "__main__":
    main()
