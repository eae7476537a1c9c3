#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plot the timelines of bench_stall (preemptive flushing, btrfs 5.11).

bench_stall --csv-dir DIR writes DIR/stall-<workload>-<mode>.csv, one row
every --sample-ms: t_ms, may_use, pinned, used, total, clamp, delalloc,
ordered, queued_tickets, ops, delayed_refs_rsv, commits, dirty_pages,
wb_pages, blocked_ms, throttled_ms, write_bw, paced_ms (older files without
the last ones still plot).  This script draws, for one
workload, one panel per mode (tickets-only first): the pool's may_use,
pinned and delayed-refs bytes, the reservations of the dirty and
under-writeback pages, and the writers' throughput, with the time tickets
were queued shaded; a panel with the share of writer time blocked in a
reservation (solid) and stalled or delayed by a peer policy (dashed) or paced (dotted);
and a last panel with the preemptive clamp.  Several result directories
(e.g. two regimes) become side-by-side columns.

    tools/plot_stall.py DIR [DIR...] -o docs/stall.png [--workload buffered]
                        [--window 1000:2500] [--titles "A,B"]
                        [--writers 4] [--item-kib 256] [--smooth 5]
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

# The project version: tools/meson.build fills it in when it installs the
# script; run from the source tree, the script reads it from meson.build.
VERSION = "@VERSION@"


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


MODES = ("tickets", "clamp1", "clamp8", "adaptive", "pace", "wbm", "wc")
LABELS = {
    "tickets": "preemptive off (tickets only)",
    "clamp1": "preemptive, clamp fixed at 1",
    "clamp8": "preemptive, clamp fixed at 8",
    "adaptive": "preemptive, adaptive clamp (default)",
    "pace": "adaptive + the library's pacing",
    "wbm": "adaptive + RocksDB WriteBufferManager stall",
    "wc": "adaptive + RocksDB WriteController delay",
}
MIB = float(1 << 20)


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    cols = {k: [float(r[k]) for r in rows] for k in rows[0]} if rows else {}
    return cols


def rate(t_ms, ops):
    """Writes per second between consecutive samples."""
    out = [0.0]
    for i in range(1, len(t_ms)):
        dt = (t_ms[i] - t_ms[i - 1]) / 1000.0
        out.append((ops[i] - ops[i - 1]) / dt / 1000.0 if dt > 0 else 0.0)
    return out


def share(t_ms, ms, writers, smooth):
    """Share of writer time spent in @ms (a cumulative column), averaged
    over @smooth samples."""
    out = [0.0] * len(t_ms)
    for i in range(len(t_ms)):
        j = max(0, i - smooth)
        dt = (t_ms[i] - t_ms[j]) * writers
        out[i] = (ms[i] - ms[j]) / dt if dt > 0 else 0.0
    return out


def window(cols, lo, hi):
    keep = [i for i, t in enumerate(cols["t_ms"]) if lo <= t <= hi]
    return {k: [v[i] for i in keep] for k, v in cols.items()}


def load_dir(csv_dir, workload, lo, hi, writers, smooth, modes=MODES):
    data = {}
    for m in modes:
        path = os.path.join(csv_dir, f"stall-{workload}-{m}.csv")
        if os.path.exists(path):
            cols = load(path)
            if cols:
                cols["kops"] = rate(cols["t_ms"], cols["ops"])
                for k in ("blocked_ms", "throttled_ms", "paced_ms"):
                    if k in cols:
                        cols[k + "_share"] = share(cols["t_ms"], cols[k],
                                                   writers, smooth)
                data[m] = window(cols, lo, hi)
    if not data:
        sys.exit(f"plot_stall: no stall-{workload}-*.csv in {csv_dir}")
    return data


def draw_column(axes, data, workload, title, item):
    """Draw one result directory; return the counters' legend entries."""
    modes = list(data)
    legend = ([], [])
    ymax = max(max(d["total"]) - min(d["used"]) for d in data.values()) / MIB
    kmax = max(max(d["kops"]) for d in data.values()) * 1.05
    for ax, m in zip(axes, modes):
        d = data[m]
        t = d["t_ms"]
        # Shade the samples at which tickets were queued: writers waiting.
        for i in range(len(t) - 1):
            if d["queued_tickets"][i] > 0:
                ax.axvspan(t[i], t[i + 1], color="tab:red", alpha=0.12,
                           lw=0)
        free = [(tot - u) / MIB for tot, u in zip(d["total"], d["used"])]
        ax.plot(t, free, color="black", lw=0.8, ls=":",
                label="total - used")
        ax.plot(t, [x / MIB for x in d["may_use"]], color="tab:blue",
                lw=1.2, label="may_use")
        ax.plot(t, [x / MIB for x in d["pinned"]], color="tab:orange",
                lw=1.2, label="pinned")
        ax.plot(t, [x / MIB for x in d["delayed_refs_rsv"]],
                color="tab:purple", lw=0.8, label="delayed refs rsv")
        if "dirty_pages" in d:
            ax.plot(t, [(a + b) * item / MIB for a, b in
                        zip(d["dirty_pages"], d["wb_pages"])],
                    color="tab:brown", lw=0.8,
                    label="rsv of dirty + writeback pages")
        ax.set_ylim(0, ymax * 1.05)
        ax.set_ylabel("MiB")
        total_ops = d["ops"][-1] - d["ops"][0]
        secs = (t[-1] - t[0]) / 1000.0 if len(t) > 1 else 1.0
        head = f"{title}\n" if title and m == modes[0] else ""
        ax.set_title(f"{head}{workload}: {LABELS[m]} "
                     f"({total_ops / secs / 1000:.1f} k writes/s in window)",
                     fontsize=10)
        ax2 = ax.twinx()
        ax2.plot(t, d["kops"], color="tab:green", lw=0.9,
                 label="writes/s (k)")
        ax2.set_ylim(0, kmax)
        ax2.set_ylabel("k writes/s", color="tab:green")
        if m == modes[0]:
            # One legend for the figure, above the panels (main()): a
            # legend inside a panel covers its lines.
            h1, l1 = ax.get_legend_handles_labels()
            h2, l2 = ax2.get_legend_handles_labels()
            h1.append(Patch(color="tab:red", alpha=0.12))
            l1.append("tickets queued")
            legend = (h1 + h2, l1 + l2)
    # A column with fewer modes than the others leaves empty mode rows:
    # the share and clamp panels stay on the last two rows.
    for ax in axes[len(modes):-2]:
        ax.set_visible(False)
    axs = axes[-2]
    colors = {"tickets": "tab:red", "clamp1": "tab:gray",
              "clamp8": "tab:olive", "adaptive": "tab:blue",
              "pace": "tab:green", "wbm": "tab:purple", "wc": "tab:brown"}
    for m in modes:
        d = data[m]
        if "blocked_ms_share" in d:
            axs.plot(d["t_ms"], [100 * x for x in d["blocked_ms_share"]],
                     color=colors[m], lw=1.0,
                     label=f"{m}: blocked in reservation")
            axs.plot(d["t_ms"], [100 * x for x in d["throttled_ms_share"]],
                     color=colors[m], lw=1.0, ls="--",
                     label=f"{m}: stalled or delayed (peer)")
        if "paced_ms_share" in d and max(d["paced_ms_share"]) > 0:
            axs.plot(d["t_ms"], [100 * x for x in d["paced_ms_share"]],
                     color=colors[m], lw=1.0, ls=":",
                     label=f"{m}: paced (in the reservation)")
    axs.set_ylim(0, 105)
    axs.set_ylabel("% of writer time")
    if axs.lines:
        axs.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0),
                   borderaxespad=0, fontsize=8)
    axc = axes[-1]
    # Tickets-only never flushes preemptively: its clamp means nothing.
    for m in (m for m in modes if m != "tickets"):
        axc.step(data[m]["t_ms"], data[m]["clamp"], where="post",
                 label=LABELS[m])
    # The clamp is an integer, 1..8.
    axc.set_ylim(0.5, 8.5)
    axc.set_yticks(range(1, 9))
    axc.set_ylabel("clamp")
    axc.set_xlabel("time (ms)")
    axc.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0),
               borderaxespad=0, fontsize=8)
    return legend


def import_matplotlib():
    """Import matplotlib (no display: it writes a file), or exit."""
    global plt, Patch
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.patches
        import matplotlib.pyplot
    except ImportError as e:
        sys.exit("plot_stall: needs matplotlib (Debian: python3-matplotlib, "
                 "with /usr/bin/python3): %s" % e)
    plt = matplotlib.pyplot
    Patch = matplotlib.patches.Patch


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--version", action="version",
                    version="%(prog)s (libspacersv) " + tool_version())
    ap.add_argument("csv_dirs", nargs="+")
    ap.add_argument("-o", "--output", default="stall.png")
    ap.add_argument("--workload", default="buffered")
    ap.add_argument("--window", default="1000:2500",
                    help="time window in ms, LO:HI (default 1000:2500)")
    ap.add_argument("--titles", default="",
                    help="comma-separated column titles")
    ap.add_argument("--writers", type=int, default=4,
                    help="bench_stall --writers (for the time shares)")
    ap.add_argument("--item-kib", type=int, default=256,
                    help="bench_stall --item-kib (reservation per page)")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="comma-separated modes, in panel order")
    ap.add_argument("--smooth", type=int, default=5,
                    help="samples averaged in the time shares")
    args = ap.parse_args()
    try:
        lo, hi = (float(x) for x in args.window.split(":"))
    except ValueError:
        ap.error("--window takes LO:HI in ms, not %r" % args.window)
    import_matplotlib()
    titles = args.titles.split(",") if args.titles else []
    titles += [""] * (len(args.csv_dirs) - len(titles))

    modes = [m for m in args.modes.split(",") if m in LABELS]
    columns = [load_dir(d, args.workload, lo, hi, args.writers, args.smooth,
                        modes)
               for d in args.csv_dirs]
    rows = max(len(c) for c in columns) + 2
    fig, axes = plt.subplots(rows, len(columns), sharex="col", squeeze=False,
                             figsize=(10 * len(columns), 2.7 * rows),
                             gridspec_kw={"height_ratios":
                                          [3] * (rows - 2) + [1.6, 1.2]})
    for col, (data, title) in enumerate(zip(columns, titles)):
        handles, labels = draw_column([axes[r][col] for r in range(rows)],
                                      data, args.workload, title,
                                      args.item_kib * 1024)
    ncol = min(len(labels), 4 * len(columns))
    legend_rows = -(-len(labels) // max(ncol, 1))
    fig.legend(handles, labels, loc="upper center", ncol=ncol,
               fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.1 + 0.25 * legend_rows) /
                           fig.get_figheight()))
    fig.savefig(args.output, dpi=100)
    print(f"plot_stall: wrote {args.output}")


if __name__ == "__main__":
    main()
