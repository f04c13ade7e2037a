# SPDX-License-Identifier: Apache-2.0
"""The dist report's shard-migration subsection, from what dist-shards
appended to shards.jsonl (bench/dist/run_shards.py): tables (ratios within
one run) and shards.png."""
from report.dist_runs import latest_runs
from report.document import Section, met, table
from report.plots import plt, save

RESULT = "shards.jsonl"
PNG = "shards.png"
VARIANTS = [("dist", "regions (sys_send)", "C0"), ("pack", "MPI pack/rebuild", "C3")]


def load(path):
    """dist-shards' runs, one a line; the last of each configuration counts."""
    runs = latest_runs(path, lambda r: (r["mode"], r["layout"], r["workers"], r["keys"], r["shards"], r["move"],
                                        r.get("single_copy"), r["value_min"], r["value_max"], r.get("settle_ms", 0)))
    return sorted(runs, key=lambda r: (r["mode"], r["layout"], r.get("single_copy", ""), r["value_min"],
                                                r["value_max"], r.get("settle_ms", 0), r["keys"], r["workers"]))


def mib(b):
    return b / 2**20


def label(r, sep=" "):
    """Workers, and what sets the run apart: a scheduler tree, the
    shared-memory copy mechanism, the value sizes, a pause."""
    extra = [] if r["layout"] == "1" else [r["layout"]]
    if r.get("single_copy", "none") != "none":
        extra.append(r["single_copy"])
    if (r["value_min"], r["value_max"]) != (64, 256):
        extra.append(f"{r['value_min']}-{r['value_max']} B")
    if r.get("settle_ms"):
        extra.append(f"settle {r['settle_ms']} ms")
    return f"{r['workers']}w" + (f"{sep}[{', '.join(extra)}]" if extra else "")


def plot(runs, path):
    """Per run: time to the first correct lookup and to the whole migration
    (dist and pack side by side), the bytes moved against the live bytes and
    the payload, and lookups/s on the migrated shards before and after."""
    fig, (t_ax, b_ax, l_ax) = plt.subplots(3, 1, figsize=(max(8, 1.4 * len(runs)), 10))
    xs = range(len(runs))
    w = 0.2
    for i, (key, name, color) in enumerate(VARIANTS):
        off = (i - 0.5) * 2 * w
        t_ax.bar([x + off - w / 2 for x in xs], [r[key]["first_ms"] for r in runs], w, color=color,
                 label=f"{name}: first lookup")
        t_ax.bar([x + off + w / 2 for x in xs], [r[key]["migrate_ms"] for r in runs], w, color=color,
                 alpha=0.45, hatch="//", edgecolor="white", label=f"{name}: all moved")
        l_ax.bar([x + (i - 0.5) * 2 * w - w / 2 for x in xs], [r[key]["lookups_per_s_before"] / 1e6 for r in runs],
                 w, color=color, alpha=0.45, label=f"{name}: before (sender)")
        l_ax.bar([x + (i - 0.5) * 2 * w + w / 2 for x in xs], [r[key]["lookups_per_s_after"] / 1e6 for r in runs],
                 w, color=color, label=f"{name}: after (receiver)")
    for x, r in zip(xs, runs):
        top = max(r["dist"]["first_ms"], r["pack"]["first_ms"], r["dist"]["migrate_ms"], r["pack"]["migrate_ms"])
        t_ax.text(x, top * 1.15, f"{r['first_x']:.2f}x", ha="center", fontsize=8)
    t_ax.set_yscale("log")
    t_ax.set_ylim(top=4 * max(max(r[k]["first_ms"], r[k]["migrate_ms"]) for r in runs for k in ("dist", "pack")))
    bars = [("dist transfer_bytes", lambda r: r["dist"]["bytes_moved"], "C0", 1.0),
            ("dist live_bytes", lambda r: r["dist"]["live_bytes"], "C0", 0.45),
            ("pack message bytes", lambda r: r["pack"]["bytes_moved"], "C3", 1.0),
            ("payload (keys + values)", lambda r: r["pack"]["payload_bytes"], "grey", 0.6)]
    for j, (name, get, color, alpha) in enumerate(bars):
        b_ax.bar([x + (j - 1.5) * w for x in xs], [mib(get(r)) for r in runs], w, color=color, alpha=alpha, label=name)
    names = [label(r, "\n") for r in runs]
    for ax, ylabel, title in ((t_ax, "ms from the barrier", "time on the receiver (label: first-lookup pack/dist)"),
                              (b_ax, "MiB, all moved shards", "bytes moved"),
                              (l_ax, "million lookups/s, summed", "lookups on the moved shards")):
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names, fontsize=7)
        ax.set_xlabel("workers")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    save(fig, path)


def rows(runs):
    out = []
    for r in runs:
        d, p = r["dist"], r["pack"]
        ratio = d["bytes_moved"] / d["live_bytes"] if d["live_bytes"] else 0
        out.append([f"{label(r)} ({r['pairs']})", f"{r['keys'] / r['shards']:.0f}", r["pairs"] * r["move"],
                    f"{d['first_ms']:.2f}", f"{p['first_ms']:.2f}", f"**{r['first_x']:.2f}x**",
                    f"{d['migrate_ms']:.2f}", f"{p['migrate_ms']:.2f}", f"{r['migrate_x']:.2f}x",
                    f"{mib(d['bytes_moved']):.1f}", f"{mib(d['live_bytes']):.1f}", f"{mib(p['bytes_moved']):.1f}",
                    f"{mib(p['payload_bytes']):.1f}", f"{ratio:.3f}", f"{d['transfer_ranges']:.0f}",
                    f"{d['lookups_per_s_after']:.3g}", f"{p['lookups_per_s_after']:.3g}",
                    "met" if r["goal"]["met"] else "NOT met"])
    return out


def breakdown(runs):
    out = []
    for r in runs:
        d, p = r["dist"], r["pack"]
        touch = d["bytes_moved"] / r["pairs"] / 4096 * r["fault_us_per_page"] / 1000
        out.append([label(r), f"{d['prep_ms']:.2f}", f"{d['wire_ms']:.2f}",
                    f"{d.get('check_wait_ms', 0):.2f} ({d.get('checks', 0):.1f})", f"{touch:.2f}",
                    f"{p['prep_ms']:.2f}", f"{p['wire_ms']:.2f}", f"{p['rebuild_ms']:.2f}",
                    f"{r['fault_us_per_page']:.2f}"])
    return table(["run", "dist: sender's PACK waits", "dist: receiver in sys_recv",
                  "of which resident-check waits (checks)", "its first touches of the moved pages (estimate)",
                  "pack: packing", "pack: receiver in MPI_Probe + MPI_Recv", "pack: rebuilding",
                  "first touch of a page, us"], out, "l" + "r" * 8)


def section(part):
    """The subsection and shards.png; None when dist-shards did not run."""
    runs = load(part.path(RESULT))
    if not runs:
        return None
    plot(runs, part.path(PNG))
    r = runs[0]
    lines = [part.heading("Migrating shards of a pointer-based index (dist-shards, issue #32, beyond the paper)"), "",
             f"A B+-tree (fan-out {r['fanout']}, {r['node_bytes']} B nodes) of 64-bit keys with values of "
             f"{r['value_min']}-{r['value_max']} B (separate objects, {r['updates_pct']}% replaced after the "
             f"build), {r['keys']} keys range-partitioned into {r['shards_per_worker']} shards a worker, each "
             "worker inserting its keys in one random order. Worker 2i moves its last "
             f"{r['move']} shards to 2i+1, one at a time. **dist**: a region a shard, sys_send of the region "
             "and its root object, the receiver looks up in it at once. **pack**: the same tree in malloc "
             "memory, packed (keys, lengths, value bytes) into one buffer, MPI_Send, and rebuilt on the "
             "receiver (a malloc a value, bulk-loaded full leaves and inner nodes). Both in the same "
             "invocation, their order alternating; medians of "
             f"{r['reps']} repetitions. *first lookup*: from an MPI_Barrier of the workers to the slowest "
             "receiver's first correct lookup (its first shard in place, one value checked in full); *all "
             "moved*: to the last worker's last send or receive (and rebuild). Every key of every migrated "
             "and every kept shard is then looked up and checked in full, and every lookup of the lookups/s "
             "phase (1 in 8 of an absent key) checked. Bytes: dist's sys_region_stats transfer_bytes and live_bytes of the moved "
             "shards; pack's message bytes; the payload is 8 B a key plus the value bytes.", "",
             f"MPI: {r['mpi']}; host {r['host']}, {r['cores']} cores; mpirun --oversubscribe, "
             f"MANYMALLOC_SCHEDULERS={r['layout']}, leases {r['mode']}, "
             f"first touch of a fresh page {r['fault_us_per_page']:.2f} us (worker 0).", ""]
    lines += table(["workers (pairs)", "keys a shard", "shards moved", "first lookup ms, dist", "pack",
                    "**pack/dist**", "all moved ms, dist", "pack", "pack/dist", "MiB moved, dist (transfer)",
                    "dist live", "pack msg", "payload", "transfer/live", "ranges", "lookups/s after, dist", "pack",
                    "goal >= 2x"], rows(runs), "l" + "r" * 16 + "l")
    lines += ["", "Where the time goes, ms for all of a pair's moved shards, the mean pair (a receiver's "
              "time includes waiting for its sender). A dist receiver writes every page of a shard into "
              "memory it has not touched before; the estimate is the moved pages times the first-touch "
              "cost measured at start-up. The pack receiver's heap is reused from one repetition to the "
              "next.", ""] + breakdown(runs)
    lines += ["", "The per-repetition first-lookup times, ms (dist / pack): "
              + "; ".join(f"{label(x)}: {', '.join(f'{v:.1f}' for v in x['dist']['first_ms_reps'])} / "
                          f"{', '.join(f'{v:.1f}' for v in x['pack']['first_ms_reps'])}" for x in runs), "",
              part.image("shards", PNG), ""]
    checks = [f"- shard migration, {label(r)}: {r['goal']['what']}: {met(r['goal']['met'])} ({r['first_x']:.2f}x)"
              for r in runs]
    return Section(lines, checks)
