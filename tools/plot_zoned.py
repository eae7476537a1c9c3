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
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="bench_zoned CSV")
    ap.add_argument("png", help="output PNG")
    ap.add_argument("--title", default="Zoned allocator: hint vs. scan "
                    "(80,000 x 256 MiB zones, 1 MiB extents)")
    args = ap.parse_args()

    fill, hint, scan = read_csv(args.csv)
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    ax.plot(fill, scan, label="scan of every group (before the fix)",
            color="tab:red")
    ax.plot(fill, hint, label="hint from the active list (seed 004 fix)",
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
