#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plot bench_zoned's CSV: time per allocation as the device fills.

Usage: plot_zoned.py CSV PNG [--title TEXT]

CSV is what bench_zoned writes (fill_pct,hint_ns,scan_ns).  Both curves go
on one logarithmic axis: the scan grows with the number of full groups in
front of the write position, the hint stays flat.
"""
import argparse
import csv
import os
import re
import sys

plt = None  # matplotlib.pyplot, imported by main() after the arguments

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


def read_csv(path):
    fill, hint, scan = [], [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            fill.append(float(row["fill_pct"]))
            hint.append(float(row["hint_ns"]))
            scan.append(float(row["scan_ns"]))
    if not fill:
        sys.exit(f"plot_zoned: {path}: no rows")
    return fill, hint, scan


def import_matplotlib():
    """Import matplotlib (no display: it writes a file), or exit."""
    global plt
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot
    except ImportError as e:
        sys.exit("plot_zoned: needs matplotlib (Debian: python3-matplotlib, "
                 "with /usr/bin/python3): %s" % e)
    plt = matplotlib.pyplot


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="version",
                    version="%(prog)s (libspacersv) " + tool_version())
    ap.add_argument("csv", help="bench_zoned CSV")
    ap.add_argument("png", help="output PNG")
    ap.add_argument("--title", default="Zoned allocator: hint vs. scan "
                    "(80,000 x 256 MiB zones, 1 MiB extents)")
    args = ap.parse_args()
    import_matplotlib()

    fill, hint, scan = read_csv(args.csv)
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(fill, scan, label="scan of every group (before the fix)",
            color="tab:red")
    ax.plot(fill, hint, label="hint from the active list (02444f2ac26e)",
            color="tab:blue")
    ax.set_yscale("log")
    ax.set_xlabel("device fill (%)")
    ax.set_ylabel("time per allocation (ns, log)")
    ax.set_xlim(0, 100)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left")
    ax.set_title(args.title, fontsize=10)
    last = len(fill) - 1
    ax.annotate(f"{scan[last] / hint[last]:.0f}x at {fill[last]:.0f}%",
                xy=(fill[last], scan[last]), xytext=(-110, -30),
                textcoords="offset points",
                arrowprops={"arrowstyle": "->"})
    fig.tight_layout()
    fig.savefig(args.png)
    print(f"plot_zoned: wrote {args.png}")


if __name__ == "__main__":
    main()
