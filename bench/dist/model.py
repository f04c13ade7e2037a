#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/dist/model.py: a scaling model of dist/'s scheduler tree (issue #32,
item 5), from the costs measured on the 16-core host, checked against the
64-worker runs there, then projected to 512, 10^4 and 10^5 workers over a
network of 1-3 us latency and 10-25 GB/s links.

    model.py [--out DIR] [--dist-results DIR] [--tree-results DIR]
             [--s-lease US] [--page-fault-us US]

Writes DIR/model.md (default build/bench/dist) with model_validation.png and
model_projection.png, and prints a summary. docs/dist-scaling.md explains
the equations and the constants; every constant below names its source.

The parts:
  constants   what the committed results and the design fix (cited)
  counts      requests, lease refills, LINK and LOAD messages per run
  queues      a scheduler as one server: MVA for a leaf's finite set of
              workers (deterministic service), M/D/1 for the levels above
  host        the 16-core host's time sharing (the 64-worker runs had 4-5
              ranks a core): the check against those runs
  tree        traffic, utilization, waits, messages and memory per level of
              a shape; the shapes recommended
"""
import argparse
import copy
import itertools
import json
import math
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(REPO, "bench", "results")
DIST_RESULTS = os.path.join(RESULTS, "2026-11-28-h200-host-dist")
TREE_RESULTS = os.path.join(RESULTS, "2026-11-28-h200-dist-tree64")

# ---------------------------------------------------------------------------
# Constants of the design (docs/dist-design.md, "Layouts" and "Options";
# src/dist/lease.h, trade.c, route.c)
# ---------------------------------------------------------------------------

SLAB = 4096                 # bytes; a slab of 64 B slots holds 64 objects
CELL = 64                   # kernel-pool cell: a trie node or a slab descriptor
GRANT_MAX = 64              # a lease grant doubles from 1 to 64 slabs (lease.c, decision 0012)
REFILL = 16                 # a region refills max(need, 16) slabs (region.c)
PAGE = 1 << 20              # memory moves between schedulers in 1 MiB pages
BASE_PAGES_MAX = 64         # watermark: min(64, pages / (8 * schedulers)) per scheduler of a subtree
LOAD_SLACK_MIN = 4          # a LOAD report when the subtree's regions move by more than max(4, 1/8)
REGION_STRUCT = 240 + 16    # sizeof(mmd_region_t) on x86-64 (region.h) + malloc's header
OWED_STRUCT = 72 + 16       # sizeof(mmd_owed_t) per worker of a leaf + the member arrays
WORLD_BYTES = 20            # per rank of the job, in every scheduler: member_of, role, host, ranks
SPACE_MAX = 15 << 40        # MANYMALLOC_DIST_SPACE is below 16 TiB: the largest whole TiB
# Message sizes (msg.h): request header 40 B, a lease report 24 B, reply
# header 32 B, a lease pair 16 B; between schedulers 16 B more.
REQ_HDR, REPORT, REP_HDR, PAIR, LINK_HDR = 40, 24, 32, 16, 16
MPI_ENVELOPE = 64           # assumed bytes of MPI match header per message on the wire

# Assumptions, stated (not measured here): see docs/dist-scaling.md.
NODE_INIT_US = 0.02         # the benchmark's work per node besides sys_alloc (two stores)
FWD_FACTOR = 1.0            # forwarding a request and relaying its reply: one request's service
NOTE_FACTOR = 0.5           # a one-way notice (LINK, UNLINK, LOAD, RETURN): half a request
REGION_FACTOR = 2.0         # RALLOC or RFREE of a small region: two requests' service
TRADE_FACTOR = 2.0          # a GRANT with its page runs: two requests' service
MPI_PEER_BYTES = 16 << 10   # assumed MPI state per connected peer (endpoint, eager buffers)


# ---------------------------------------------------------------------------
# Constants measured on the 16-core host (read from the committed results)
# ---------------------------------------------------------------------------

def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_json(path):
    with open(path) as f:
        return json.load(f)


def measured_constants(dist_dir):
    """The per-request costs: service time from one scheduler's saturation
    rate (dist-load, 8 and 15 workers), the rest of a round trip from its
    one-worker cycle, local allocation and the scheduler's per-object work
    from dist-latency."""
    load = [r for r in read_jsonl(os.path.join(dist_dir, "load.jsonl")) if r["mode"] == "remote"]
    lat_r = read_json(os.path.join(dist_dir, "latency_remote.json"))
    lat_l = read_json(os.path.join(dist_dir, "latency_local.json"))
    one = next(r for r in load if r["workers"] == 1)
    sat = [r["calls_per_s"] for r in load if r["workers"] >= 8]   # saturated (validate() says so too)
    s_us = 1e6 / (sum(sat) / len(sat))
    c = {
        "load": sorted(load, key=lambda r: r["workers"]),
        "S": s_us,                                       # us of scheduler time per small request
        "sat_rate": sum(sat) / len(sat),
        "rtt1": one["median_ns"] / 1e3,                  # us, one worker's cycle (alloc+free mix)
        "rt_alloc": lat_r["alloc_batch_ns"] / 1e3,       # us, a sys_alloc round trip alone
        "t_alloc": lat_l["alloc_batch_ns"] / 1e3,        # us, a leased sys_alloc
        "c_obj": lat_r["balloc_ns_per_object"] / 1e3,    # us of scheduler work per object of a BALLOC
    }
    c["a"] = c["rtt1"] - c["S"]   # us of a round trip outside the scheduler: both ends' MPI, two transfers
    return c


def read_tree_runs(tree_dir):
    """{(mode, layout): [row of run1, row of run2, ...]}"""
    runs = {}
    for sub in sorted(os.listdir(tree_dir)):
        path = os.path.join(tree_dir, sub, "tree.jsonl")
        if os.path.exists(path):
            for r in read_jsonl(path):
                runs.setdefault((r["mode"], r["layout"]), []).append(r)
    return runs


# ---------------------------------------------------------------------------
# Counts: requests and messages the protocol sends (exact, no fitting)
# ---------------------------------------------------------------------------

def lease_calls(allocs, slot=64):
    """LEASE round trips to allocate `allocs` objects of `slot` bytes in a
    fresh region: the grant doubles 1, 2, 4, ... GRANT_MAX (lease.c), the region
    refills max(want, 16) slabs, and a lease takes what the region's pool
    has before refilling (region.c: mmd_region_lease), so a short grant
    comes where a refill's leftover runs out."""
    per_slab = SLAB // slot
    need = -(-allocs // per_slab)
    have = calls = pool = 0
    grant = 1
    while have < need:
        want = grant
        if pool == 0:
            pool = max(want, REFILL)
        got = min(want, pool)
        pool -= got
        have += got
        calls += 1
        grant = min(2 * grant, GRANT_MAX)
    return calls


def load_reports(regions_per_leaf, fanouts):
    """LOAD notices as each leaf's regions go from 0 to regions_per_leaf one
    at a time (route.c: mmd_load_check). fanouts: children per scheduler of
    each level above the leaves. Returns reports per level, leaves last."""
    levels = len(fanouts) + 1
    reported = [[0] * math.prod(fanouts[:l]) for l in range(levels)]
    counts = [[0] * math.prod(fanouts[:l]) for l in range(levels)]
    sent = [0] * levels

    def check(level, i):
        if level == 0:
            return
        load, last = counts[level][i], reported[level][i]
        slack = max(LOAD_SLACK_MIN, last // 8)
        if last - slack <= load <= last + slack:
            return
        reported[level][i] = load
        sent[level] += 1
        parent = i // fanouts[level - 1]
        first = parent * fanouts[level - 1]
        counts[level - 1][parent] = sum(reported[level][first:first + fanouts[level - 1]])
        check(level - 1, parent)

    for _ in range(regions_per_leaf):
        for leaf in range(len(counts[-1])):
            counts[-1][leaf] += 1
            check(levels - 1, leaf)
    return sent


def predicted_counts(layout, workers, allocs, mode):
    """Per 1000 sys_alloc: requests workers send, messages between
    schedulers, forwarded requests (the dist-tree counters), for one region
    per worker made at its leaf under the root (one LINK up to the top)."""
    levels = [int(n) for n in layout.split(",")]
    depth = len(levels)
    fanouts = [levels[i + 1] // levels[i] for i in range(depth - 1)]
    per_leaf = workers // levels[-1]
    calls = 1 + (allocs if mode == "remote" else lease_calls(allocs))   # the RALLOC, then ALLOCs or LEASEs
    link_hops = workers * (depth - 1)
    loads = sum(load_reports(per_leaf, fanouts)) if depth > 1 else 0
    forwarded = workers * max(0, depth - 2)
    total = workers * allocs / 1000
    return {"requests": workers * calls / total, "sched_messages": (link_hops + loads) / total,
            "forwarded": forwarded / total, "calls": calls, "loads": loads}


# ---------------------------------------------------------------------------
# Queues
# ---------------------------------------------------------------------------

def mva(n, z, s):
    """A leaf as one server of deterministic service s (us) under n workers
    that each think z (us) between requests: mean value analysis, where an
    arriving request finds the queue the others left and, in service, half a
    request to go. Returns (throughput per us, response time per request,
    utilization)."""
    q = u = x = 0.0
    r = s
    for k in range(1, n + 1):
        r = s + (q - u) * s + u * s / 2
        x = k / (z + r)
        q, u = x * r, x * s
        if u > 0.9995:               # saturated: every further worker only waits
            x = 1 / s
            r = max(r, n * s - z)
            return x, r, 1.0
    return x, r, u


def md1_wait(lam, s_mean, s2_mean):
    """M/D/1-like (Pollaczek-Khinchine) wait in queue, for a mix of
    deterministic services: lam per us, E[S], E[S^2]."""
    rho = lam * s_mean
    if rho >= 1:
        return math.inf, rho
    return lam * s2_mean / (2 * (1 - rho)), rho


# ---------------------------------------------------------------------------
# The 16-core host: 64 workers and their schedulers on 16 cores
# ---------------------------------------------------------------------------

def host_cycle(layout, workers, cores, t_turn, work, service):
    """One call's cycle on an oversubscribed host. Every rank is runnable
    (waiters poll and sched_yield: OMPI_MCA_mpi_yield_when_idle=1), so each
    core runs its k = ranks / cores ranks in turn, a turn costing t_turn
    plus the work the rank has. A worker's call is answered once its leaf
    has had its turn, in which it serves its whole queue: the round of the
    leaf's core, (k - 1)(t_turn + work) + n * service, or of an average
    core, k t_turn + (workers / cores)(work + service), whichever is longer."""
    levels = [int(n) for n in layout.split(",")]
    ranks = workers + sum(levels)
    k = ranks / cores
    n_leaf = workers / levels[-1]
    leaf_core = (k - 1) * (t_turn + work) + n_leaf * service
    avg_core = k * t_turn + workers / cores * (work + service)
    return max(leaf_core, avg_core)


def solve_t_turn(layout, workers, cores, wait_per_call, service):
    lo, hi = 0.0, 1000.0
    for _ in range(100):
        mid = (lo + hi) / 2
        cyc = host_cycle(layout, workers, cores, mid, 0.0, service)
        lo, hi = (mid, hi) if cyc < wait_per_call else (lo, mid)
    return (lo + hi) / 2


def solve_lease_constants(points, workers, cores, t_turn):
    """The worker's work between leases (B) and a LEASE's service (S_L)
    under time sharing, from two runs whose leaf core binds:
    (k - 1)(t + B) + n S_L - B = wait per lease."""
    rows = []
    for layout, wait in points:
        levels = [int(n) for n in layout.split(",")]
        k = (workers + sum(levels)) / cores
        n = workers / levels[-1]
        rows.append((k - 2, n, wait - (k - 1) * t_turn))
    (a1, b1, c1), (a2, b2, c2) = rows
    det = a1 * b2 - a2 * b1
    return (c1 * b2 - c2 * b1) / det, (a1 * c2 - a2 * c1) / det


def validate(c, runs, cores=16):
    """Predicted against measured, the 64-worker runs. The counts are
    predicted outright. The times need the host's time sharing: t_turn is
    fitted on remote 1,4,16, and the lease path's two constants on local
    1,4,16 and local 1; the other three runs are predictions."""
    meas = {}
    for key, rows in runs.items():
        meas[key] = {f: sum(r[f] for r in rows) / len(rows)
                     for f in ("alloc_ms", "wait_mean_ms", "requests_per_1000_allocs",
                               "sched_messages_per_1000_allocs", "forwarded_per_1000_allocs")}
        meas[key]["spread"] = {f: (min(r[f] for r in rows), max(r[f] for r in rows))
                               for f in ("alloc_ms", "wait_mean_ms")}
        meas[key]["workers"] = rows[0]["workers"]
        meas[key]["nodes"] = rows[0]["nodes"]
    workers = meas[("remote", "1")]["workers"]
    allocs = meas[("remote", "1")]["nodes"]
    counts = {key: predicted_counts(key[1], workers, allocs, key[0]) for key in meas}

    def wait_per_call(key):
        return meas[key]["wait_mean_ms"] * 1e3 / counts[key]["calls"]

    t_turn = solve_t_turn("1,4,16", workers, cores, wait_per_call(("remote", "1,4,16")), c["S"])
    b_os, s_lease_os = solve_lease_constants(
        [("1,4,16", wait_per_call(("local", "1,4,16"))), ("1", wait_per_call(("local", "1")))],
        workers, cores, t_turn)
    fitted = {("remote", "1,4,16"), ("local", "1,4,16"), ("local", "1")}
    rows = []
    for key in sorted(meas, key=lambda k: (k[0] != "remote", len(k[1]))):
        mode, layout = key
        work, service = (NODE_INIT_US, c["S"]) if mode == "remote" else (b_os, s_lease_os)
        cyc = host_cycle(layout, workers, cores, t_turn, work, service)
        n = counts[key]["calls"]
        local_us = 0 if mode == "remote" else allocs * c["t_alloc"]
        pred_alloc = (n * cyc + local_us) / 1e3
        pred_wait = n * (cyc - work) / 1e3
        rows.append({"mode": mode, "layout": layout, "fitted": key in fitted,
                     "alloc_ms": (pred_alloc, meas[key]["alloc_ms"], meas[key]["spread"]["alloc_ms"]),
                     "wait_ms": (pred_wait, meas[key]["wait_mean_ms"], meas[key]["spread"]["wait_mean_ms"]),
                     "requests": (counts[key]["requests"], meas[key]["requests_per_1000_allocs"]),
                     "sched_messages": (counts[key]["sched_messages"], meas[key]["sched_messages_per_1000_allocs"]),
                     "forwarded": (counts[key]["forwarded"], meas[key]["forwarded_per_1000_allocs"])})
    for mode in ("remote", "local"):   # the figure the runs were for: the tree against one scheduler
        base = next(r for r in rows if r["mode"] == mode and r["layout"] == "1")
        for r in rows:
            if r["mode"] == mode:
                r["speedup"] = (base["alloc_ms"][0] / r["alloc_ms"][0], base["alloc_ms"][1] / r["alloc_ms"][1])
    load_rows = []
    for r in c["load"]:
        x, _, _ = mva(r["workers"], c["a"], c["S"])
        used = r["workers"] == 1 or r["workers"] >= 8   # the inputs of a and S
        load_rows.append((r["workers"], 1e3 * r["workers"] / x, r["median_ns"], used))
    return {"rows": rows, "load": load_rows, "t_turn": t_turn, "b_os": b_os, "s_lease_os": s_lease_os,
            "workers": workers, "allocs": allocs, "cores": cores}


# ---------------------------------------------------------------------------
# Workloads: what a worker asks of its leaf
# ---------------------------------------------------------------------------

class Workload:
    """A worker's demand. Objects of 64 B in regions of region_objects
    objects each (Fig. 4h: 30,000), each region made under the root at the
    worker's leaf (one LINK up to the top) and freed whole (one UNLINK),
    unless leaf_parent (made under a region its leaf owns: no message up).
    think_us: the worker's own work per sys_alloc. remote: every sys_alloc a
    round trip (MANYMALLOC_DIST_LEASE=0); leased: one LEASE per grant of 16
    slabs (1024 objects), reports riding on it. growth: the fraction of the
    bytes allocated that stays (0: frees meet allocations, the steady state)."""

    def __init__(self, name, remote, think_us, region_objects=30000, leaf_parent=False,
                 cross=0.0, live_bytes=256 << 20, live_regions=8, growth=0.0, sibling=False):
        self.name, self.remote, self.think = name, remote, think_us
        self.region_objects, self.leaf_parent, self.cross = region_objects, leaf_parent, cross
        self.live_bytes, self.live_regions, self.growth = live_bytes, live_regions, growth
        self.sibling = sibling   # cross-leaf targets under the same parent, not anywhere

    def variant(self, **changes):
        w = copy.copy(self)
        w.__dict__.update(changes)
        return w

    def per_alloc(self, c, pf_us, s_lease):
        """Per sys_alloc: the worker's own time (us), the requests to its own
        leaf and their service, request and reply bytes, and the requests to
        other leaves' regions. A cross-leaf object is never leased (LEASE
        answers val 1 for a region another scheduler owns): it is an ALLOC
        round trip through the tree in either mode."""
        own = 1 - self.cross
        if self.remote:
            return self.think + NODE_INIT_US, own, c["S"], REQ_HDR, REP_HDR, self.cross
        per = GRANT_MAX * SLAB // 64
        work = self.think + c["t_alloc"] + NODE_INIT_US + GRANT_MAX * pf_us / per
        return (work, own / per, s_lease, REQ_HDR + GRANT_MAX * REPORT, REP_HDR + GRANT_MAX * PAIR,
                self.cross)


FANOUTS = (4, 8, 16, 32, 64)


def grid_shapes(workers, fanouts=FANOUTS, max_levels=4):
    """MANYMALLOC_SCHEDULERS shapes of 1-4 levels with every fan-out in
    fanouts; the workers spread over the leaves."""
    shapes = [(1,)]
    for depth in range(2, max_levels + 1):
        for fs in itertools.product(fanouts, repeat=depth - 1):
            if math.prod(fs) <= workers:
                shapes.append(fs)
    return shapes


def search_shapes(workers, run, rho_max=0.7, fanouts=FANOUTS, max_levels=4, max_per_leaf=64):
    """For one scheduler and each depth of 2-4 levels and each choice of
    the upper fan-outs in fanouts, the least last fan-out (any of 4-64:
    leaves under each scheduler of the level above) that keeps every
    scheduler under rho_max with at most max_per_leaf workers a leaf;
    run(fs) evaluates a shape. Busy-ness falls as leaves are added, so a
    bisection finds it."""
    out = [run((1,))]
    for depth in range(2, max_levels + 1):
        for upper in itertools.product(fanouts, repeat=depth - 2):
            above = math.prod(upper)
            lo_f = max(4, math.ceil(workers / max_per_leaf / above))
            hi = min(64, workers // above)
            if hi < lo_f:
                continue
            last = run(upper + (hi,))
            out.append(last)
            if last["rho_max"] > rho_max:
                continue
            lo = lo_f - 1   # below the range, or infeasible
            while hi - lo > 1:
                mid = (lo + hi) // 2
                r = run(upper + (mid,))
                if r["rho_max"] <= rho_max:
                    hi, last = mid, r
                else:
                    lo = mid
            out.append(last)
    return out


def shape_name(fs):
    if fs == (1,):
        return "1"
    out, n = ["1"], 1
    for f in fs:
        n *= f
        out.append(str(n))
    return ",".join(out)


def closed_queue(n, z, s):
    """A leaf under n workers that each think z us between requests, with
    deterministic service s: MVA up to 256 workers, beyond that the open
    M/D/1 queue at the throughput that closes the loop. Returns (requests
    per us, response time per request in us, utilization)."""
    if n <= 256:
        return mva(n, z, s)
    lo, hi = 0.0, min(n / (z + s), 1 / s)
    for _ in range(60):
        x = (lo + hi) / 2
        wq, _ = md1_wait(x, s, s * s)
        lo, hi = (x, hi) if x < n / (z + s + wq) else (lo, x)
    x = lo
    wq, rho = md1_wait(x, s, s * s)
    return x, s + wq, rho


def cross_paths(fs, depth, per_level, sibling=False):
    """For a request to a uniformly chosen other leaf (or one under the
    same parent): the forwarding visits it makes at each level (all of that
    level's schedulers together; the origin leaf's own forward included)
    and the one-way network edges it adds (its reply adds as many)."""
    visits, edges = [0.0] * depth, 0.0
    leaves = per_level[-1]
    for lca in range(depth - 1):
        p = (leaves // per_level[lca] - leaves // per_level[lca + 1]) / max(1, leaves - 1)
        if sibling:
            p = 1.0 if lca == depth - 2 else 0.0
        visits[lca] += p
        for m in range(lca + 1, depth - 1):
            visits[m] += 2 * p
        visits[-1] += p
        edges += p * 2 * (depth - 1 - lca)
    return visits, edges


def evaluate(fs, workers, wl, c, lat_us, bw_gbs, pf_us, s_lease, space=SPACE_MAX, shm_hop=False):
    """Traffic, utilization, waits, messages and memory per level of the
    shape fs (scheduler fan-outs top down; (1,) is one scheduler). lat_us:
    one-way network latency; bw_gbs: link bandwidth. shm_hop: the leaf
    shares its workers' node, so their hop is the measured shared-memory
    one and only scheduler-to-scheduler hops cross the network."""
    single = fs == (1,)
    depth = 1 if single else len(fs) + 1
    per_level = [1] if single else [math.prod(fs[:l]) for l in range(depth)]
    leaves = per_level[-1]
    n_leaf = math.ceil(workers / leaves)
    nsched = sum(per_level)
    bw = bw_gbs * 1e3   # bytes per us
    work, own_n, s_req, req_b, rep_b, cross_n = wl.per_alloc(c, pf_us, s_lease)
    n_req = own_n + cross_n                            # requests per sys_alloc
    per_req = 1 / n_req                                # sys_alloc per request
    think = work * per_req
    x_share = cross_n * per_req                        # of the requests, those to other leaves
    wire = lambda b: (b + MPI_ENVELOPE) / bw                       # noqa: E731
    req_b = (1 - x_share) * req_b + x_share * REQ_HDR
    rep_b = (1 - x_share) * rep_b + x_share * REP_HDR
    hop = c["a"] if shm_hop else c["a"] + 2 * lat_us + wire(req_b) + wire(rep_b)
    s_fwd, s_note = FWD_FACTOR * c["S"], NOTE_FACTOR * c["S"]
    regions_per_req = per_req / wl.region_objects     # each made and freed: RALLOC, RFREE
    s_region = REGION_FACTOR * c["S"]
    base_pages = max(1, min(BASE_PAGES_MAX, space // PAGE // (8 * nsched)))
    sub = [1] * depth                                  # schedulers in a subtree of each level
    for l in range(depth - 2, -1, -1):
        sub[l] = 1 + fs[l] * sub[l + 1]
    bytes_per_req = per_req * 64
    visits, edges = (cross_paths(fs, depth, per_level, wl.sibling) if depth > 1 and x_share
                     else ([0.0] * depth, 0.0))
    notes_up = 0.0 if wl.leaf_parent or depth == 1 else 2 * regions_per_req   # LINK, UNLINK
    # The leaf's service per worker request: its own requests; for one to
    # another leaf, its forward and (symmetrically) serving one that another
    # leaf sent; its share of the regions' RALLOC and RFREE and the notices
    # they send up.
    s_leaf = ((1 - x_share) * s_req + x_share * (c["S"] + (s_fwd if depth > 1 else 0))
              + regions_per_req * 2 * s_region + notes_up * s_note)
    x_leaf, resp, _ = closed_queue(n_leaf, think + hop, s_leaf)
    x_worker = x_leaf / n_leaf                          # requests per us a worker makes
    levels = []
    for l in range(depth):
        below = n_leaf * leaves / per_level[l]          # workers in a subtree of this level
        rate = x_worker * below
        churn = rate * regions_per_req * 2              # regions made and freed below, per us
        msgs = {}
        if l == depth - 1:
            msgs["requests from workers"] = (rate * (1 - x_share), s_req)
            if x_share:
                msgs["cross-leaf, sent and served"] = (rate * x_share * (2 if depth > 1 else 1), c["S"])
            msgs["RALLOC, RFREE"] = (churn, s_region)
            msgs["LINK, UNLINK sent up"] = (rate * notes_up, s_note)
        else:
            child = fs[l]
            msgs["LINK, UNLINK"] = (rate * notes_up, s_note)
            # LOAD: a child reports when its subtree's region count has
            # moved by its slack; made and freed at random, the count walks
            # and needs about slack^2 of them to move that far.
            slack = max(LOAD_SLACK_MIN, wl.live_regions * below / child / 8)
            msgs["LOAD"] = (churn / slack ** 2, s_note)
            # GRANT (and RETURN when it shrinks): one per 3/4 of a child's
            # high watermark of net growth below it.
            grant_bytes = 0.75 * base_pages * sub[l + 1] * PAGE
            msgs["GRANT, RETURN"] = (2 * wl.growth * rate * bytes_per_req / grant_bytes, TRADE_FACTOR * c["S"])
        if visits[l] and l < depth - 1:
            msgs["cross-leaf forwards"] = (x_worker * x_share * workers * visits[l] / per_level[l], s_fwd)
        lam = sum(r for r, _ in msgs.values())
        s_mean = sum(r * s for r, s in msgs.values()) / lam if lam else 0.0
        s2 = sum(r * s * s for r, s in msgs.values()) / lam if lam else 0.0
        if l == depth - 1:
            rho, wq = x_leaf * s_leaf, resp - s_leaf
        else:
            wq, rho = md1_wait(lam, s_mean, s2)
        wire_bytes = (rate * (req_b + rep_b) if l == depth - 1 else 0) + \
            (lam - (rate if l == depth - 1 else 0)) * (REQ_HDR + LINK_HDR) + 2 * lam * MPI_ENVELOPE
        levels.append({"level": l, "count": per_level[l], "rate": lam, "rho": rho, "wq": wq, "msgs": msgs,
                       "link_util": wire_bytes / bw})
    wait = resp + hop                  # per request: the round trip, the leaf's queue and service
    if x_share and depth > 1:   # the way to the other leaf and back, and its queue there
        wq_all = [lv["wq"] if math.isfinite(lv["wq"]) else 1e9 for lv in levels]
        wait += x_share * (2 * edges * (lat_us + wire(REQ_HDR + LINK_HDR))
                           + sum(visits[m] * (s_fwd + 2 * wq_all[m]) for m in range(depth - 1))
                           + wq_all[-1])
    members = [fs[l] if l < depth - 1 else n_leaf for l in range(depth)]
    barrier = sum(2 * lat_us + 2 * c["S"] + m * c["S"] for m in members)
    return {"shape": shape_name(fs), "fs": fs, "depth": depth, "nsched": nsched, "n_leaf": n_leaf,
            "levels": levels, "workers": workers, "wl": wl, "space": space, "wait": wait, "think": think,
            "per_req": per_req,
            "req_rate_worker": x_worker * 1e6, "alloc_rate_worker": x_worker * per_req * 1e6,
            "waiting": wait / (think + wait), "rho_max": max(v["rho"] for v in levels),
            "barrier": barrier}


def cross_capacity(fs, workers, wl, c, lat, bw, pf_us, s_lease, rho_max=0.7):
    """The largest fraction of requests to other leaves' regions (targets
    uniform) that keeps every scheduler of the shape under rho_max."""
    if fs == (1,):
        return None
    lo, hi = 0.0, 1.0
    if evaluate(fs, workers, wl.variant(cross=1.0), c, lat, bw, pf_us, s_lease)["rho_max"] <= rho_max:
        return 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        ok = evaluate(fs, workers, wl.variant(cross=mid), c, lat, bw, pf_us, s_lease)["rho_max"] <= rho_max
        lo, hi = (mid, hi) if ok else (lo, mid)
    return lo


def memory(r):
    """Bytes of one scheduler's state, per level of the evaluated shape r."""
    return [sched_memory(l, r["depth"], r["fs"], r["n_leaf"], r["wl"], r["workers"], r["nsched"], r["space"])
            for l in range(r["depth"])]


def sched_memory(level, depth, fs, n_leaf, wl, workers, nsched, space):
    """Bytes of a scheduler's own state at this level (Layouts): a leaf's
    regions with their slab descriptors and tries, its workers' debts and
    connections; above the leaves, the routing tries and, at the top, the
    kid records of every region made under the root below it; everyone the
    arrays sized by the job's ranks."""
    key_levels = math.ceil((math.log2(space // SLAB) + 1) / 3)
    fixed = WORLD_BYTES * (workers + nsched) + 640
    if level == depth - 1:
        slabs = wl.live_bytes // SLAB
        regions = wl.live_regions
        per_region_slabs = slabs // regions
        region_bytes = REGION_STRUCT + CELL * (trie_nodes(per_region_slabs, key_levels)   # Used Trie
                                               + 3 + key_levels)                           # Partial, Free
        per_worker = (slabs * CELL + regions * region_bytes
                      + CELL * trie_nodes(regions, 11) / max(1, regions) * regions / 8 + OWED_STRUCT)
        ranges = CELL * trie_nodes(n_leaf * slabs // REFILL, key_levels, spacing=REFILL)  # Used Ranges, runs of 16
        conns = (n_leaf + 1) * MPI_PEER_BYTES
        return fixed + n_leaf * per_worker + ranges + conns
    children = fs[level] if depth > 1 else 0
    lent = CELL * 4 * children * key_levels        # held, lent_ranges, lent_ids: a few runs per child
    conns = (children + (1 if level else 0)) * MPI_PEER_BYTES
    kids = 0
    if level == 0 and not wl.leaf_parent:
        kids = 1.5 * 16 * wl.live_regions * workers   # mmd_kid_t per region under the root, array slack
    return fixed + lent + conns + kids


def trie_nodes(n, levels, spacing=1):
    """Nodes of an 8-ary trie over n keys spaced `spacing` apart."""
    if n <= 0:
        return 0
    total = 0
    for j in range(1, levels + 1):
        total += max(1, min(n, math.ceil(n * spacing / 8 ** j)))
    return total


def recommend(results, rho_max=0.7, max_per_leaf=64):
    """The fewest schedulers that keep every one under rho_max with at most
    max_per_leaf workers a leaf, then the least wait; None (and the least
    busy shape) when no shape does."""
    ok = [r for r in results if r["rho_max"] <= rho_max and r["n_leaf"] <= max_per_leaf]
    if not ok:
        return None, min(results, key=lambda r: (r["rho_max"], r["wait"]))
    return min(ok, key=lambda r: (r["nsched"], r["wait"], r["depth"])), min(ok, key=lambda r: r["wait"])


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------

def err(pred, meas):
    return f"{100 * (pred - meas) / meas:+.0f}%" if meas else "n/a"


def fmt_rate(x):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}"


def fmt_bytes(b):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.0f} B"


def workloads():
    return [Workload("remote, flat out", True, 0.0),
            Workload("remote, 1 alloc / 10 us", True, 10.0),
            Workload("leased, flat out", False, 0.0),
            Workload("leased, 1 alloc / 10 us", False, 10.0)]


def project(c, args):
    """Each size, workload and latency: the shapes searched at 10 GB/s, the
    one recommended, and it again at 25 GB/s and with its leaf on its
    workers' node. Where no shape keeps the top under 70% because every
    region made under the root sends it a LINK and an UNLINK, the same with
    regions made under a parent region the leaf owns."""
    out = []
    for n in (512, 10_000, 100_000):
        for wl in workloads():
            for lat in (1.0, 3.0):
                def run(w, fs, bw=10.0, shm=False):
                    return evaluate(fs, n, w, c, lat, bw, args.page_fault_us, args.s_lease, shm_hop=shm)
                used, note = wl, ""
                res = search_shapes(n, lambda fs: run(used, fs))
                rec, _ = recommend(res)
                if rec is None:
                    used = wl.variant(leaf_parent=True)
                    res2 = search_shapes(n, lambda fs: run(used, fs))
                    rec2, _ = recommend(res2)
                    if rec2 is not None:
                        rec, res, note = rec2, res2, "regions under a leaf-owned parent"
                    else:
                        used = wl
                row = {"workers": n, "workload": wl.name, "lat": lat, "rec": rec, "note": note,
                       "least_busy": min(res, key=lambda r: (r["rho_max"], r["wait"])),
                       "single": res[0], "floor": run(used, (max(4, min(64, n)),) if n <= 64 else
                                                     per_worker_shape(n)),
                       "grid": [run(used, fs) for fs in grid_shapes(n)] if lat == 3.0 and n in args.grid_for
                       and wl.name in args.grid_workloads else None}
                if rec is not None:
                    row["bw25"] = run(used, rec["fs"], bw=25.0)
                    row["shm"] = run(used, rec["fs"], shm=True)
                    row["cross"] = cross_capacity(rec["fs"], n, used, c, lat, 10.0, args.page_fault_us,
                                                  args.s_lease)
                    row["memory"] = memory(rec)
                out.append(row)
    return out


def sensitivity(c, args, v, n=10_000, lat=3.0):
    """The recommended shape at n workers and lat us when one input moves."""
    base = workloads()
    cases = [("as above", c, args.s_lease, args.page_fault_us, lambda w: w),
             ("S x 2 (a NIC's MPI costs on the scheduler)", dict(c, S=2 * c["S"]), 2 * args.s_lease,
              args.page_fault_us, lambda w: w),
             (f"S_L = {v['s_lease_os']:.1f} us (the time-shared fit, cold caches)", c, v["s_lease_os"],
              args.page_fault_us, lambda w: w),
             ("page fault 2 us", c, args.s_lease, 2.0, lambda w: w),
             ("a region per 3,000 objects", c, args.s_lease, args.page_fault_us,
              lambda w: w.variant(region_objects=3000)),
             ("1% of sys_alloc in other leaves' regions, anywhere", c, args.s_lease, args.page_fault_us,
              lambda w: w.variant(cross=0.01)),
             ("1% of sys_alloc in a sibling leaf's regions", c, args.s_lease, args.page_fault_us,
              lambda w: w.variant(cross=0.01, sibling=True))]
    rows = []
    for name, cc, s_lease, pf, change in cases:
        for wl in (base[1], base[2]):
            w = change(wl)
            res = search_shapes(n, lambda fs: evaluate(fs, n, w, cc, lat, 10.0, pf, s_lease))
            rec, _ = recommend(res)
            note = ""
            if rec is None and not w.leaf_parent:
                w2 = w.variant(leaf_parent=True)
                rec, _ = recommend(search_shapes(n, lambda fs: evaluate(fs, n, w2, cc, lat, 10.0, pf, s_lease)))
                note = " (regions under a leaf-owned parent)" if rec else ""
            rows.append((name, wl.name + note, rec))
    return rows


def per_worker_shape(n):
    """A shape with about one worker a leaf: the least wait any tree gives."""
    fs, leaves = [], 1
    while leaves * 64 < n:
        fs.append(64)
        leaves *= 64
    fs.append(max(4, min(64, math.ceil(n / leaves))))
    return tuple(fs)


def validation_md(v, c):
    L = [f"## Check against the 64-worker runs ({v['source']})", "",
         f"{v['workers']} workers x {v['allocs']} sys_alloc of 64 B on {v['cores']} cores "
         "(65, 69 and 85 ranks: 4-5 a core). Measured: the mean of run1 and run2 (range in brackets).", "",
         "### Counts (predicted from the protocol alone)", "",
         "| mode | layout | requests / 1000 sys_alloc, pred / meas | sched messages / 1000, pred / meas "
         "| forwarded / 1000, pred / meas |", "|---|---|---:|---:|---:|"]
    for r in v["rows"]:
        L.append(f"| {r['mode']} | {r['layout']} | {r['requests'][0]:.3f} / {r['requests'][1]:.3f} | "
                 f"{r['sched_messages'][0]:.4f} / {r['sched_messages'][1]:.4f} | "
                 f"{r['forwarded'][0]:.4f} / {r['forwarded'][1]:.4f} |")
    L += ["", "### One scheduler under 1-15 workers on dedicated cores (dist-load, remote)", "",
          f"MVA with S = {c['S']:.3f} us (1 / the saturation rate at 8 and 15 workers) and the rest of "
          f"the round trip a = {c['a']:.3f} us (the one-worker cycle {c['rtt1']:.3f} us less S):", "",
          "| workers | ns per call, predicted | measured | error | |", "|---:|---:|---:|---:|---|"]
    for w, pred, meas, used in v["load"]:
        L.append(f"| {w} | {pred:.0f} | {meas:.0f} | {err(pred, meas)} | {'input' if used else 'predicted'} |")
    L += ["", "### Time on the oversubscribed host", "",
          "Each core runs its ranks in turn; a call is answered within one round of the leaf's core, in which "
          "the leaf serves its whole queue: cycle = max((k-1)(t_turn + w) + n S, k t_turn + (W/C)(w + S)) with "
          "k ranks a core, n workers a leaf, W workers on C cores, w the worker's work between calls (0 remote, "
          "B leased) and S the request's service (S remote, S_L leased). The alloc phase ends with the slowest "
          "worker (measured: 1.2-1.9x the mean wait), the model gives the mean one, hence its phase times run "
          "low.", "",
          f"Fitted: a turn of a rank on a shared core t_turn = {v['t_turn']:.2f} us (remote 1,4,16); the "
          f"lease path under time sharing, the worker's work between leases B = {v['b_os']:.0f} us and a "
          f"LEASE's service S_L = {v['s_lease_os']:.1f} us (local 1,4,16 and local 1). The other three are "
          "predictions.", "",
          "| mode | layout | alloc phase ms, pred | meas | error | mean wait per worker ms, pred | meas | error "
          "| speed-up over one scheduler, pred / meas | |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in v["rows"]:
        pa, ma, sa = r["alloc_ms"]
        pw, mw, sw = r["wait_ms"]
        L.append(f"| {r['mode']} | {r['layout']} | {pa:.0f} | {ma:.0f} [{sa[0]:.0f}-{sa[1]:.0f}] | {err(pa, ma)} | "
                 f"{pw:.1f} | {mw:.1f} [{sw[0]:.1f}-{sw[1]:.1f}] | {err(pw, mw)} | "
                 f"{r['speedup'][0]:.2f}x / {r['speedup'][1]:.2f}x | {'fitted' if r['fitted'] else 'predicted'} |")
    return L


def rhos(r):
    return " / ".join(format(lv["rho"], ".2f") for lv in r["levels"])


def projection_md(proj):
    L = ["## Projections", "",
         "Per size, workload and one-way latency: the shape recommended, the fewest schedulers that keep "
         "every one under 70% busy with at most 64 workers a leaf (then the least wait). Wait: per request, the round trip over the "
         "network, the leaf's queue and service; at 10 / 25 GB/s, and in brackets with the leaf on its "
         "workers' node (a shared-memory hop). Floor: the wait with about one worker a leaf. rho: busy "
         "fraction per level, top first. Cross-leaf: the fraction of requests to other leaves' regions "
         "(uniform targets) the shape absorbs under 70%.", "",
         "| workers | workload | latency us | shape (leaves x workers) | schedulers | wait us, 10 / 25 GB/s "
         "[shm hop] | floor us | worker waiting | rho, top first | sys_alloc/s a worker | requests/s a worker "
         "| cross-leaf | barrier us | one scheduler: rho, wait us |",
         "|---:|---|---:|---|---:|---|---:|---:|---|---:|---:|---:|---:|---|"]
    for p in proj:
        single, rec = p["single"], p["rec"]
        one = f"{single['rho_max']:.2f}, {single['wait']:.3g}"
        if rec is None:
            o = p["least_busy"]
            L.append(f"| {p['workers']} | {p['workload']} | {p['lat']:g} | none under 70%; least busy: "
                     f"{o['shape']} ({o['levels'][-1]['count']} x {o['n_leaf']}) | {o['nsched']} | "
                     f"{o['wait']:.3g} | {p['floor']['wait']:.3g} | {o['waiting']:.0%} | {rhos(o)} | "
                     f"{fmt_rate(o['alloc_rate_worker'])} | {fmt_rate(o['req_rate_worker'])} | - | "
                     f"{o['barrier']:.3g} | {one} |")
            continue
        note = f" ({p['note']})" if p["note"] else ""
        cross = "-" if p["cross"] is None else f"{100 * p['cross']:.2g}%"
        L.append(f"| {p['workers']} | {p['workload']}{note} | {p['lat']:g} | {rec['shape']} "
                 f"({rec['levels'][-1]['count']} x {rec['n_leaf']}) | {rec['nsched']} | "
                 f"{rec['wait']:.3g} / {p['bw25']['wait']:.3g} [{p['shm']['wait']:.3g}] | "
                 f"{p['floor']['wait']:.3g} | {rec['waiting']:.0%} | {rhos(rec)} | "
                 f"{fmt_rate(rec['alloc_rate_worker'])} | {fmt_rate(rec['req_rate_worker'])} | {cross} | "
                 f"{rec['barrier']:.3g} | {one} |")
    return L


def levels_md(proj):
    """What each level carries in the recommended shapes, 3 us and 10 GB/s."""
    L = ["## What each level carries (recommended shapes, 3 us, 10 GB/s)", "",
         "Messages a scheduler receives per second, its busy fraction and queue wait, its link's use at "
         "10 GB/s, its own memory (a leaf's: its workers' 256 MiB of live 64 B objects each, in 8 regions; "
         "with MPI state for each peer it talks to and the arrays sized by the job's ranks), and the "
         "traffic that keeps it busiest.", "",
         "| workers | workload | shape | level | schedulers | messages/s in, each | busy | wait in queue us "
         "| link use | memory, each | busiest with |", "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for p in proj:
        if p["lat"] != 3.0 or p["rec"] is None:
            continue
        rec = p["rec"]
        for lv, mem in zip(rec["levels"], p["memory"]):
            main = max(lv["msgs"].items(), key=lambda kv: kv[1][0] * kv[1][1])[0] if lv["msgs"] else "-"
            L.append(f"| {p['workers']} | {p['workload']} | {rec['shape']} | {lv['level']} | {lv['count']} | "
                     f"{fmt_rate(lv['rate'] * 1e6)} | {lv['rho']:.2f} | {lv['wq']:.2f} | {lv['link_util']:.2%} | "
                     f"{fmt_bytes(mem)} | {main} |")
    return L


def plots(v, proj, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    rows = v["rows"]
    xs = range(len(rows))
    a.bar([x - 0.2 for x in xs], [r["alloc_ms"][1] for r in rows], 0.4, label="measured", color="C0")
    a.bar([x + 0.2 for x in xs], [r["alloc_ms"][0] for r in rows], 0.4, label="model", color="C1")
    for x, r in zip(xs, rows):
        if r["fitted"]:
            a.text(x + 0.2, r["alloc_ms"][0], "fit", ha="center", va="bottom", fontsize=7)
    a.set_xticks(list(xs), [f"{r['mode']}\n{r['layout']}" for r in rows], fontsize=8)
    a.set_yscale("log")
    a.set_ylabel("alloc phase, ms (64 workers x 30,000)")
    a.set_title("64 workers on 16 cores", fontsize=10)
    a.legend(fontsize=8)
    w = [x[0] for x in v["load"]]
    b.plot(w, [x[2] for x in v["load"]], "o", label="measured (dist-load, remote)")
    b.plot(w, [x[1] for x in v["load"]], "-", label="MVA from S and a")
    b.set_xlabel("workers on one scheduler (dedicated cores)")
    b.set_ylabel("ns per call, median worker")
    b.set_title("one scheduler as a server", fontsize=10)
    b.legend(fontsize=8)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.16, top=0.92, wspace=0.25)
    fig.savefig(os.path.join(out, "model_validation.png"), dpi=100)
    plt.close(fig)

    grids = [p for p in proj if p["grid"]]
    names = sorted({p["workload"] for p in grids}, key=lambda n: [w.name for w in workloads()].index(n))
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4), squeeze=False)
    for ax, name in zip(axes[0], names):
        for p, color in zip([p for p in grids if p["workload"] == name], ("C0", "C1", "C2")):
            ok = [(r["nsched"], r["wait"]) for r in p["grid"] if r["rho_max"] <= 0.7]
            bad = [(r["nsched"], r["wait"]) for r in p["grid"] if r["rho_max"] > 0.7 and r["wait"] < 1e4]
            if ok:
                ax.scatter(*zip(*ok), s=12, color=color, label=f"{p['workers']} workers: every rho <= 0.7")
            if bad:
                ax.scatter(*zip(*bad), s=12, color=color, marker="x", alpha=0.35, label="some rho > 0.7")
            if p["rec"]:
                ax.scatter([p["rec"]["nsched"]], [p["rec"]["wait"]], s=110, facecolors="none", edgecolors="k")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("schedulers in the shape (fan-outs 4-64, 1-4 levels)")
        ax.set_ylabel("worker wait per request, us")
        ax.set_title(f"{name}, 3 us, 10 GB/s; circled: recommended", fontsize=9)
        ax.legend(fontsize=7)
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.13, top=0.92, wspace=0.22)
    fig.savefig(os.path.join(out, "model_projection.png"), dpi=100)
    plt.close(fig)


def sensitivity_md(rows, n=10_000, lat=3.0):
    L = [f"## Sensitivity ({n} workers, {lat:g} us, 10 GB/s)", "",
         "| change | workload | shape (leaves x workers) | schedulers | wait us | rho, top first |",
         "|---|---|---|---:|---:|---|"]
    for name, wl, rec in rows:
        if rec is None:
            L.append(f"| {name} | {wl} | none under 70% | - | - | - |")
        else:
            L.append(f"| {name} | {wl} | {rec['shape']} ({rec['levels'][-1]['count']} x {rec['n_leaf']}) | "
                     f"{rec['nsched']} | {rec['wait']:.3g} | {rhos(rec)} |")
    return L


def constants_md(c, args):
    return ["## Constants", "",
            "| constant | value | source |", "|---|---:|---|",
            f"| S, scheduler time per small request | {c['S']:.3f} us | 1 / {c['sat_rate']:.3g} calls/s, "
            "dist-load remote at 8 and 15 workers (2026-11-28-h200-host-dist/load.jsonl) |",
            f"| one worker's cycle on shared memory | {c['rtt1']:.3f} us | dist-load remote, 1 worker |",
            f"| a, a round trip outside the scheduler | {c['a']:.3f} us | the cycle less S; kept whole over "
            "the network as the ends' MPI cost, the network adds 2 x latency + bytes / bandwidth |",
            f"| sys_alloc round trip alone | {c['rt_alloc']:.3f} us | latency_remote.json alloc_batch_ns "
            "(for comparison) |",
            f"| leased sys_alloc | {1e3 * c['t_alloc']:.1f} ns | latency_local.json alloc_batch_ns |",
            f"| scheduler work per object of a BALLOC | {1e3 * c['c_obj']:.1f} ns | latency_remote.json "
            "balloc_ns_per_object |",
            f"| S_L, a LEASE of {GRANT_MAX} slabs with {GRANT_MAX} reports, dedicated core | {args.s_lease:.2f} us | "
            f"estimate: S + {GRANT_MAX} slabs x 3 x the BALLOC per-object work + {GRANT_MAX} reports x 1 x it "
            "(--s-lease); the 64-worker fit under time sharing is an upper bound |",
            f"| first touch of a 4 KiB page | {args.page_fault_us:.2f} us | assumed (--page-fault-us) |",
            "| forwarding, notices, RALLOC/RFREE, GRANT | 1, 0.5, 2, 2 x S | assumed from the message "
            "work each does |",
            f"| MPI state per connected peer | {MPI_PEER_BYTES >> 10} KiB | assumed |",
            f"| slab, cell, grant, refill, watermarks, load slack | 4 KiB, 64 B, 1->{GRANT_MAX} slabs, 16 slabs, "
            "min(64, pages / 8n) MiB per subtree scheduler, max(4, 1/8) | docs/dist-reference.md Fixed sizes, dist-design.md "
            "Layouts |",
            f"| space for the projections | {SPACE_MAX >> 40} TiB | MANYMALLOC_DIST_SPACE's maximum: "
            f"256 MiB live a worker fits {(SPACE_MAX >> 20) // 256:,} workers; the 10^5-worker rows assume "
            "the same 256 MiB, more than the space holds (150 MiB a worker would fit) |"]


def default_s_lease(c):
    return c["S"] + GRANT_MAX * 3 * c["c_obj"] + GRANT_MAX * c["c_obj"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.path.join(REPO, "build", "bench", "dist"))
    p.add_argument("--dist-results", default=DIST_RESULTS)
    p.add_argument("--tree-results", default=TREE_RESULTS)
    p.add_argument("--s-lease", type=float, help=f"us a LEASE of {GRANT_MAX} slabs takes a scheduler "
                   "(default: estimated from S and the BALLOC per-object work)")
    p.add_argument("--page-fault-us", type=float, default=0.5)
    p.add_argument("--no-plots", action="store_true")
    args = p.parse_args()
    args.grid_for = () if args.no_plots else (512, 10_000, 100_000)
    args.grid_workloads = ("remote, flat out", "leased, flat out")
    c = measured_constants(args.dist_results)
    if args.s_lease is None:
        args.s_lease = default_s_lease(c)
    v = validate(c, read_tree_runs(args.tree_results))
    v["source"] = os.path.relpath(args.tree_results, REPO)
    proj = project(c, args)
    os.makedirs(args.out, exist_ok=True)
    md = ["<!-- python3 bench/dist/model.py; docs/dist-scaling.md explains it -->",
          "# dist: a scaling model of the scheduler tree", ""]
    md += constants_md(c, args) + [""] + validation_md(v, c) + [""] + projection_md(proj) + [""]
    md += levels_md(proj) + [""] + sensitivity_md(sensitivity(c, args, v)) + [""]
    if not args.no_plots:
        plots(v, proj, args.out)
        md += ["![validation](model_validation.png)", "", "![projection](model_projection.png)", ""]
    with open(os.path.join(args.out, "model.md"), "w") as f:
        f.write("\n".join(md))
    for r in v["rows"]:
        print(f"check: {r['mode']:6} {r['layout']:7} alloc phase {r['alloc_ms'][0]:7.0f} ms vs {r['alloc_ms'][1]:7.0f} "
              f"({err(*r['alloc_ms'][:2])}), mean wait {r['wait_ms'][0]:7.1f} ms vs {r['wait_ms'][1]:7.1f} "
              f"({err(*r['wait_ms'][:2])}){' [fitted]' if r['fitted'] else ''}")
    for p in proj:
        if p["lat"] == 3.0:
            rec = p["rec"]
            print(f"recommend: {p['workers']:6} workers, {p['workload']:24}: "
                  + (f"{rec['shape']} ({rec['levels'][-1]['count']} leaves x {rec['n_leaf']}), wait "
                     f"{rec['wait']:.3g} us{', ' + p['note'] if p['note'] else ''}" if rec else "none under 70%"))
    print(f"model.py: wrote {os.path.join(args.out, 'model.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
