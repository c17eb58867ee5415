#!/usr/bin/python3
"""Draws bench/run_bench.py's scaling.csv: build/bench/scaling.png.

    /usr/bin/python3 bench/plot_scaling.py build/bench/scaling.csv build/bench/scaling.png [TITLE]

One panel per mode (fwd-train, bwd, eval). x: threads (log 2), y: speed-up from the fewest
threads of the run (time there / time at T, medians; log 2). A thin line per row (shape, dtype,
layout) for ours and for PyTorch, and a thick line per implementation (ours, the plain reference
kernels, PyTorch, oneDNN) through the geometric means; the dashed diagonal is linear scaling.
Needs matplotlib; without it the script prints a note and exits with status 2.
"""
import csv
import math
import sys

IMPLS = (("ours", "syncbn", "#2a9d3f"), ("ref", "reference", "#7f7f7f"),
         ("torch", "PyTorch", "#ee8a2a"), ("onednn", "oneDNN", "#3b75af"))
MODES = ("fwd-train", "bwd", "eval")


def fnum(v):
    try:
        x = float(v)
        return x if math.isfinite(x) and x > 0 else None
    except (TypeError, ValueError):
        return None


def geomean(vals):
    vals = [v for v in vals if v]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def main(argv):
    if len(argv) not in (3, 4):
        print("usage: plot_scaling.py scaling.csv scaling.png [TITLE]")
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (Debian: python3-matplotlib); scaling.png not drawn")
        return 2
    with open(argv[1]) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print("no rows in %s" % argv[1])
        return 1
    base = int(rows[0]["from_threads"])
    counts = sorted({int(r["threads"]) for r in rows})
    fig, axes = plt.subplots(1, len(MODES), figsize=(15, 5), sharey=True)
    for ax, mode in zip(axes, MODES):
        sel = [r for r in rows if r["mode"] == mode]
        xs = [base] + counts
        ax.plot(xs, [t / base for t in xs], "k--", lw=0.8, label="linear")
        for key, label, color in IMPLS:
            if key in ("ours", "torch"):
                for row_key in {(r["shape"], r["dtype"], r["layout"]) for r in sel}:
                    pts = [(int(r["threads"]), fnum(r["speedup_" + key])) for r in sel
                           if (r["shape"], r["dtype"], r["layout"]) == row_key]
                    pts = [(1.0 * t, v) for t, v in pts if v]
                    if pts:
                        pts.sort()
                        ax.plot([base] + [p[0] for p in pts], [1.0] + [p[1] for p in pts],
                                color=color, lw=0.5, alpha=0.35)
            ys = [geomean([fnum(r["speedup_" + key]) for r in sel if int(r["threads"]) == t])
                  for t in counts]
            pts = [(t, y) for t, y in zip(counts, ys) if y]
            if pts:
                ax.plot([base] + [p[0] for p in pts], [1.0] + [p[1] for p in pts], color=color,
                        lw=2.5, marker="o", label=label + " (geomean)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_title(mode)
        ax.set_xlabel("threads")
        ax.grid(True, which="both", lw=0.3)
    axes[0].set_ylabel("speed-up from %d thread%s" % (base, "s" if base > 1 else ""))
    axes[0].legend(fontsize=8, loc="upper left")
    title = "syncbn scaling: time at %d thread%s / time at T (medians)" % (
        base, "s" if base > 1 else "")
    if len(argv) > 3:
        title += "\n" + argv[3]
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=90)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
