#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plot the timelines of bench_logstore (cleaning policies of a log store).

bench_logstore --csv-dir DIR writes DIR/logstore-<workload>-<policy>.csv,
one row per window (100 ms): t_ms (its end), dt_ms (its length: a late
sampler makes it longer), puts, puts_per_s, free_bytes, dead_bytes,
cleaner_bytes, stall_ms.  This script draws one column per
workload and one panel per policy: the device bandwidth the writers' puts
and the cleaner's copies took (MiB/s, stacked), the pool's free and dead
bytes (MiB, right axis), and the windows in which writers stalled (their
time in reservations or in a delay), shaded by how much.

    tools/plot_logstore.py DIR -o docs/logstore.png
                           [--workloads overwrite,bulk-unpin]
                           [--policies tickets,preempt,pace,cleaner,wc]
                           [--writers 4]
                           [--record-bytes 4096]
"""
import argparse
import csv
import os
import re
import sys

# matplotlib.pyplot and matplotlib.patches.Patch, imported by main() after
# the arguments are parsed.
plt = None
Patch = None

# The project version: filled in when installed; from the source tree,
# read from meson.build (as tools/plot_stall.py does).
VERSION = "@VERSION@"

MIB = float(1 << 20)
WORKLOADS = ("overwrite", "bulk-unpin")
POLICIES = ("tickets", "preempt", "pace", "cleaner", "wc")
LABELS = {
    "tickets": "btrfs's data behaviour (tickets only)",
    "preempt": "library defaults (data preemption)",
    "pace": "library defaults + data pacing",
    "cleaner": "the store's background cleaner",
    "wc": "background cleaner + WriteController delay",
}


def tool_version():
    """The libspacersv version this script belongs to."""
    if not VERSION.startswith("@"):
        return VERSION
    top = os.path.join(os.path.dirname(os.path.realpath(__file__)), os.pardir)
    try:
        with open(os.path.join(top, "meson.build"), encoding="utf-8") as f:
            return re.search(r"\bversion: '([^']+)'", f.read()).group(1)
    except (OSError, AttributeError):
        return "unknown"


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {k: [float(r[k]) for r in rows] for k in rows[0]} if rows else {}


def import_matplotlib():
    """Import matplotlib (no display: it writes a file), or exit."""
    global plt, Patch
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.patches
        import matplotlib.pyplot
    except ImportError as e:
        sys.exit("plot_logstore: needs matplotlib (Debian: python3-matplotlib,"
                 " with /usr/bin/python3): %s" % e)
    plt = matplotlib.pyplot
    Patch = matplotlib.patches.Patch


def draw(ax, d, title, writers, record_bytes, ymax, mmax):
    """One policy's panel; returns the legend's handles and labels."""
    t = d["t_ms"]
    dt = d["dt_ms"]
    puts_mib = [p * record_bytes / MIB * 1000.0 / w
                for p, w in zip(d["puts"], dt)]
    clean_mib = [c / MIB * 1000.0 / w for c, w in zip(d["cleaner_bytes"], dt)]
    # Shade each window by the share of writer time that stalled.
    for i, ms in enumerate(d["stall_ms"]):
        share = min(1.0, ms / (writers * dt[i]))
        if share > 0.01:
            ax.axvspan(t[i] - dt[i], t[i], color="tab:red",
                       alpha=0.35 * share, lw=0)
    ax.stackplot(t, puts_mib, clean_mib,
                 colors=("tab:green", "tab:olive"), alpha=0.7,
                 labels=("puts (MiB/s)", "cleaner copies (MiB/s)"))
    ax.set_ylim(0, ymax)
    ax.set_ylabel("MiB/s")
    ax.set_title(title, fontsize=10)
    ax2 = ax.twinx()
    ax2.plot(t, [x / MIB for x in d["free_bytes"]], color="tab:blue",
             lw=1.2, label="free (MiB)")
    ax2.plot(t, [x / MIB for x in d["dead_bytes"]], color="black",
             lw=1.0, ls="--", label="dead, pinned (MiB)")
    ax2.set_ylim(0, mmax)
    ax2.set_ylabel("MiB")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    h1.append(Patch(color="tab:red", alpha=0.35))
    l1.append("writers stalled (shade: share of their time)")
    return h1 + h2, l1 + l2


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--version", action="version",
                    version="%(prog)s (libspacersv) " + tool_version())
    ap.add_argument("csv_dir")
    ap.add_argument("-o", "--output", default="logstore.png")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--writers", type=int, default=4,
                    help="bench_logstore --writers (for the stall share)")
    ap.add_argument("--record-bytes", type=int, default=4096,
                    help="bytes per put (the default 4 KiB records)")
    args = ap.parse_args()
    import_matplotlib()
    workloads = [w for w in args.workloads.split(",") if w]
    policies = [p for p in args.policies.split(",") if p]
    data = {}
    for w in workloads:
        for p in policies:
            path = os.path.join(args.csv_dir, f"logstore-{w}-{p}.csv")
            if os.path.exists(path):
                cols = load(path)
                if cols:
                    data[(w, p)] = cols
    if not data:
        sys.exit(f"plot_logstore: no logstore-*.csv in {args.csv_dir}")
    ymax = 1.1 * max(
        max((pu * args.record_bytes + c) / MIB * 1000.0 / w
            for pu, c, w in zip(d["puts"], d["cleaner_bytes"], d["dt_ms"]))
        for d in data.values())
    mmax = 1.1 * max(max(max(d["free_bytes"]), max(d["dead_bytes"]))
                     for d in data.values()) / MIB
    fig, axes = plt.subplots(len(policies), len(workloads), sharex="col",
                             squeeze=False,
                             figsize=(8 * len(workloads),
                                      2.6 * len(policies) + 0.8))
    handles, labels = [], []
    for c, w in enumerate(workloads):
        for r, p in enumerate(policies):
            ax = axes[r][c]
            if (w, p) not in data:
                ax.set_visible(False)
                continue
            d = data[(w, p)]
            secs = sum(d["dt_ms"]) / 1000.0
            title = (f"{w}: {LABELS.get(p, p)} "
                     f"({sum(d['puts']) / secs / 1000:.1f} k puts/s)")
            h, lab = draw(ax, d, title, args.writers, args.record_bytes,
                          ymax, mmax)
            if not handles:
                handles, labels = h, lab
            if r == len(policies) - 1:
                ax.set_xlabel("time (ms)")
    fig.legend(handles, labels, loc="upper center", ncol=len(labels),
               fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / fig.get_figheight()))
    fig.savefig(args.output, dpi=100)
    print(f"plot_logstore: wrote {args.output}")


if __name__ == "__main__":
    main()
