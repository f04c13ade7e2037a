# SPDX-License-Identifier: Apache-2.0
"""The dist report's linked-list exchange subsection (the Myrmics paper's
Sect. 6.5, Fig. 4g-h) from what bench/dist/run_lists.py wrote (lists.jsonl,
lists_meta.json): a table of every run's times, the ratios of ours to each
peer within the run, the issue's figures where the run had their size, and
a plot per net (lists_<net>.png)."""
import json
import os

from report.dist_runs import read_jsonl
from report.document import Section, met, table
from report.plots import plt, save

PEERS = ["mpi-pack", "mpi-bulk", "mpi-rma", "shmem"]
ABOUT = {
    "ours-alloc": "ours, one sys_alloc a node (the paper's way), the regions swapped by sys_sendrecv",
    "ours-balloc": "ours, the nodes from one sys_balloc, the regions swapped by sys_sendrecv",
    "mpi-pack": "hand-written MPI: malloc'ed nodes, pack, MPI_Sendrecv, unpack into new nodes and relink, "
                "modify, pack back",
    "mpi-bulk": "MPI, one contiguous block a list moved as it is (offsets for links): the upper bound",
    "mpi-rma": "per-node MPI-3 RMA: a window a process, MPI_Get + flush and MPI_Put a node",
    "shmem": "per-node OpenSHMEM: shmem_malloc a node (collective), shmem_getmem + shmem_putmem a node",
}


def load(part):
    runs = read_jsonl(part.path("lists.jsonl"))
    if not runs:
        return [], {}
    meta_path = part.path("lists_meta.json")
    meta = {}
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
    return runs, meta


def name(r):
    """A run's column: the impl, with the scheduler layout for ours."""
    return r["impl"] + (f" S={r['schedulers']}" if r["impl"].startswith("ours") and r.get("schedulers") else "")


def ok(r):
    return r is not None and "failed" not in r and "skipped" not in r and "total_s" in r


def status(r):
    if r is None:
        return "-"
    if "skipped" in r:
        return "skipped"
    if "failed" in r:
        return "**failed**: " + r["failed"]
    return "ok"


def backing_name(mapping):
    """What the file name of a mapping says backs it (list_backing)."""
    if mapping.startswith("osc_sm"):
        return "osc/sm's shared segment, mapped by every rank of the host (a get or put is a memcpy)"
    if mapping.startswith("SYSV"):
        return "System V shared memory"
    if mapping.startswith("ucx_shm") or mapping.startswith("shmem"):
        return f"shared memory ({mapping.split('.')[0]})"
    if mapping == "anonymous":
        return "private memory (every access goes through the transport)"
    return mapping


def key_order(runs):
    nets = []
    for r in runs:
        if r["net"] not in nets:
            nets.append(r["net"])
    cases = sorted({(r["net"], r["len"], r["workers"]) for r in runs},
                   key=lambda c: (nets.index(c[0]), c[1], c[2]))
    return nets, cases


def fmt(x):
    return f"{x:.4f}" if x < 10 else f"{x:.2f}"


def runs_rows(runs):
    _, cases = key_order(runs)
    out = []
    for net, length, workers in cases:
        for r in (r for r in runs if (r["net"], r["len"], r["workers"]) == (net, length, workers)):
            times = [fmt(r["build_s"]), fmt(r["exchange_s"]), fmt(r["total_s"])] if ok(r) else ["-", "-", "-"]
            out.append([net, length, workers, name(r), r.get("ranks", "-")] + times + [r.get("reps", "-"), status(r)])
    return out


def ratio(a, b, key):
    return a[key] / b[key] if ok(a) and ok(b) and b[key] > 0 else None


def ratio_lines(runs):
    """ours / peer, total time (exchange time in parentheses): below 1, ours is faster."""
    peers = [p for p in PEERS if any(r["impl"] == p for r in runs)]
    _, cases = key_order(runs)
    out = []
    for net, length, workers in cases:
        here = [r for r in runs if (r["net"], r["len"], r["workers"]) == (net, length, workers)]
        by_impl = {r["impl"]: r for r in here if not r["impl"].startswith("ours")}
        for o in (r for r in here if r["impl"].startswith("ours")):
            cells = []
            for p in peers:
                peer = by_impl.get(p)
                t, e = ratio(o, peer, "total_s"), ratio(o, peer, "exchange_s")
                if t is None:
                    cells.append("-" if peer is None else "ours failed" if not ok(o) else
                                 "peer skipped" if "skipped" in peer else "peer failed")
                else:
                    cells.append(f"{t:.3g} ({e:.3g})")
            out.append([net, length, workers, name(o)] + cells)
    return table(["net", "L", "workers", "ours"] + [f"ours / {p}" for p in peers], out, "lrrl" + "r" * len(peers))


def goals(runs, meta):
    """The issue's figures (#32, item 4) where this run had their size."""
    hosts = len(meta.get("hosts") or []) or "several"
    def find(net, impl, workers, length, sched="1"):
        for r in runs:
            if (r["net"], r["impl"], r["workers"], r["len"]) == (net, impl, workers, length) and \
                    (not impl.startswith("ours") or r.get("schedulers") == sched):
                return r
        return None

    out = []
    for w in (8, 16):
        ours, mpi, shm = find("shm", "ours-alloc", w, 30000), find("shm", "mpi-pack", w, 30000), \
            find("shm", "shmem", w, 30000)
        if ok(ours) and ok(mpi):
            t = ours["total_s"] / mpi["total_s"]
            out.append(f"- one host, {w} workers, L = 30000, sys_alloc per node: >= 2x faster than hand-written "
                       f"MPI: {met(t <= 0.5)} (ours / mpi-pack = {t:.3g}, "
                       f"{1 / t:.2f}x)")
        if ok(ours) and shm is not None:
            if ok(shm):
                t = ours["total_s"] / shm["total_s"]
                out.append(f"- one host, {w} workers, L = 30000: faster than per-node OpenSHMEM: "
                           f"{met(t < 1)} (ours / shmem = {t:.3g})")
            else:
                out.append(f"- one host, {w} workers, L = 30000: per-node OpenSHMEM did not finish "
                           f"({status(shm)}); nothing to compare")
    for net, where in (("hosts", f"{hosts} namespace hosts"), ("tcp", "loopback TCP (a stand-in for 4 hosts)")):
        ours, mpi, shm = find(net, "ours-alloc", 8, 30000), find(net, "mpi-pack", 8, 30000), \
            find(net, "shmem", 8, 30000)
        if ok(ours) and shm is not None:
            t = shm["total_s"] / ours["total_s"] if ok(shm) else None
            out.append(f"- {where}, 8 workers, L = 30000: >= 50x faster than per-node OpenSHMEM: " +
                       (f"{met(t >= 50)} ({t:.3g}x)" if t else
                        f"per-node OpenSHMEM did not finish ({status(shm)}), nothing to compare"))
        if ok(ours) and ok(mpi):
            t = ours["total_s"] / mpi["total_s"]
            out.append(f"- {where}, 8 workers, L = 30000: no slower than hand-written MPI: "
                       f"{met(t <= 1)} (ours / mpi-pack = {t:.3g})")
    if not out:
        out.append("- The issue's figures need 8 and 16 workers at L = 30000 (run_lists.py --full); "
                   "this run had none of those sizes.")
    return out


def plot(runs, net, path):
    """A column per list length: total time (top) and exchange time (bottom)
    against workers, a line per implementation; failed runs as x at the
    axis' foot."""
    mine = [r for r in runs if r["net"] == net]
    lens = sorted({r["len"] for r in mine})
    names = []
    for r in mine:
        if name(r) not in names:
            names.append(name(r))
    fig, axes = plt.subplots(2, len(lens), figsize=(4.2 * len(lens), 6.4), squeeze=False)
    for col, length in enumerate(lens):
        for row, key in enumerate(("total_s", "exchange_s")):
            ax = axes[row][col]
            for i, n in enumerate(names):
                pts = sorted(((r["workers"], r) for r in mine if r["len"] == length and name(r) == n),
                             key=lambda p: p[0])
                good = [(w, r[key]) for w, r in pts if ok(r)]
                style = "--" if n.startswith("mpi-bulk") else "-"
                marker = "s" if n.startswith("ours") else "o"
                if good:
                    ax.plot([w for w, _ in good], [v for _, v in good], style, marker=marker, color=f"C{i}",
                            label=n)
                bad = [w for w, r in pts if not ok(r) and "skipped" not in r]
                if bad:
                    for w in bad:
                        ax.annotate("x", (w, 0), xycoords=("data", "axes fraction"), color=f"C{i}",
                                    ha="center", va="bottom", fontsize=12, fontweight="bold")
            ax.set_yscale("log")
            ax.set_xlabel("workers (processes for the peers)")
            ax.set_ylabel(("total" if key == "total_s" else "exchange") + " s, median")
            ax.set_title(f"L = {length} nodes of 256 B ({net})", fontsize=9)
            ax.grid(alpha=0.3)
            ws = sorted({r["workers"] for r in mine})
            ax.set_xticks(ws)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("linked-list exchange (x at the foot: a run that failed)", fontsize=10)
    save(fig, path)


def section(part):
    """The subsection and its plots; None when run_lists.py did not run."""
    runs, meta = load(part)
    if not runs:
        return None
    nets, _ = key_order(runs)
    lines = [part.heading("Linked-list exchange (the Myrmics paper's Sect. 6.5, Fig. 4g-h)"), "",
             "Each of W processes builds a list of L nodes of 256 B; then in all-to-all stages (W-1 for even "
             "W) the two processes of each pair walk and modify every node of each other's list, moving it "
             "there and back or reaching each node remotely; at the end every process checks every node of "
             "its own list (owner, index, visits, a stamp hashing the visitors in stage order, all payload "
             "bytes). Build and exchange are each the slowest process's; the figures are medians over the "
             "repetitions after a warm-up (per-node peers over tcp: one run, no warm-up). Ours runs W "
             "workers plus its schedulers (MANYMALLOC_SCHEDULERS, S=), every peer W processes.", ""]
    lines += [f"- **{impl}**: {about}" for impl, about in ABOUT.items()
              if any(r["impl"] == impl for r in runs)]
    lines += [""]
    if meta:
        lines += [f"MPI build: {meta.get('mpi_build')}; host {meta.get('host')}, {meta.get('cores')} cores, "
                  f"kernel {meta.get('kernel')}; launched as {meta.get('launch')}"
                  + (f", hostfile {meta['hostfile']}" if meta.get("hostfile") else "")
                  + (f"; net hosts on {len(meta['hosts'])} namespace hosts ({', '.join(meta['hosts'])}) made by "
                     "scripts/dist-hosts" if meta.get("hosts") else "")
                  + (f", with {meta['mpirun_args']}" if meta.get("mpirun_args") else "")
                  + f"; {meta.get('wall_s', '?')} s in all.", ""]
        for net in nets:
            n = meta.get("nets", {}).get(net, {})
            env = " ".join(f"{k}={v}" for k, v in n.get("env", {}).items()) or "no settings"
            lines.append(f"- net **{net}**: {n.get('about', '')} ({env}); transports seen:")
            for who, t in meta.get("transports", {}).get(net, {}).items():
                parts = [f"{k} {'/'.join(v)}" for k, v in t.items() if k != "exit" and isinstance(v, list)]
                lines.append(f"  - {who}: {', '.join(parts) or 'not seen (exit ' + str(t.get('exit')) + ')'}")
            backing = sorted({f"{r['impl']}: {backing_name(r.get('window_backing') or r.get('heap_backing'))}"
                              for r in runs if r["net"] == net and (r.get("window_backing") or r.get("heap_backing"))})
            if backing:
                lines.append("  - memory of the per-node peers (rank 0's mapping): " + "; ".join(backing))
        over = sorted({(r["ranks"], r["cores"]) for r in runs if r.get("oversubscribed")})
        if over:
            lines += ["", "Oversubscribed (more ranks than cores): " +
                      ", ".join(f"{rk} ranks on {c} cores" for rk, c in over) + "."]
        lines += [""]
    lines += ["Times (s):", ""] + table(["net", "L", "workers", "implementation", "ranks", "build s", "exchange s",
                                         "total s", "reps", "status"], runs_rows(runs), "lrrlrrrrrl") + [""]
    lines += ["Ours / peer within the run, total time (exchange time in parentheses); below 1 ours is faster:",
              ""] + ratio_lines(runs) + [""]
    checks = goals(runs, meta)
    lines += ["The issue's figures (#32 item 4):", ""] + checks + [""]
    for net in nets:
        png = f"lists_{net}.png"
        plot(runs, net, part.path(png))
        lines += [part.image(f"lists {net}", png), ""]
    return Section(lines, checks)
