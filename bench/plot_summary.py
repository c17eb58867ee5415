#!/usr/bin/python3
"""Draws bench/run_bench.py's table as a picture: build/bench/summary.png.

    /usr/bin/python3 bench/plot_summary.py build/bench/results.csv build/bench/summary.png [TITLE]

One horizontal bar group per row of results.csv (shape, dtype, T, layout, mode); its bars are
peer median / ours median for PyTorch, oneDNN and the plain reference kernels (ref / ours), on a
log x axis, drawn from the vertical line at 1.0: a bar reaching right of the line is a case where
ours is faster than that peer, left of it one where the peer is faster. A peer without a number
for a row (missing, unsup, error) has no bar there; the row's label says which. TITLE (run_bench.py
passes the machine line) goes under the heading.

Needs matplotlib (Debian's python3-matplotlib, for /usr/bin/python3); without it the script prints
a note and exits with status 2, which bench/run_bench.py reports without failing the run.
"""
import csv
import math
import os
import sys

PEERS = (("torch", "torch / ours", "#ee8a2a"),
         ("onednn", "oneDNN / ours", "#3b75af"),
         ("ref", "ref / ours", "#7f7f7f"))


def fnum(v):
    try:
        x = float(v)
        return x if math.isfinite(x) and x > 0 else None
    except (TypeError, ValueError):
        return None


def main(argv):
    if len(argv) not in (3, 4):
        print("usage: plot_summary.py results.csv summary.png [TITLE]")
        return 1
    src, dst = argv[1], argv[2]
    subtitle = argv[3] if len(argv) > 3 else ""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print("matplotlib is missing for %s (%s): install python3-matplotlib (Debian)"
              % (sys.executable, e))
        return 2
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    groups = []  # (label, [ratio or None per peer], csv row)
    for r in rows:
        ours = fnum(r.get("ours_med_ms")) if r.get("ours_status") == "ok" else None
        ratios, absent = [], []
        for name, _, _ in PEERS:
            med = fnum(r.get(name + "_med_ms")) if r.get(name + "_status") == "ok" else None
            ratios.append(med / ours if med and ours else None)
            if med is None:
                st = r.get(name + "_status") or "missing"
                absent.append("%s %s" % ({"onednn": "oneDNN"}.get(name, name),
                                         "unsup" if st == "unsupported" else st))
        if ours is None:
            absent = ["ours %s" % (r.get("ours_status") or "missing")]
        label = "%s %s T%s %s %s" % (r["shape"], r["dtype"], r["threads"], r["layout"], r["mode"])
        if absent:
            label += " (%s)" % ", ".join(absent)
        groups.append((label, ratios, r))
    if not groups:
        print("no rows in %s" % src)
        return 1

    n, k = len(groups), len(PEERS)
    bar_h = 0.8 / k
    fig_h = max(3.0, 0.14 * k * n + 1.6)
    fig, ax = plt.subplots(figsize=(10, fig_h))
    vals = [v for _, rs, _ in groups for v in rs if v]
    lo = min(vals + [1.0]) / 1.5
    hi = max(vals + [1.0]) * 1.5
    for j, (_, legend, color) in enumerate(PEERS):
        ys, xs = [], []
        for i, (_, rs, _) in enumerate(groups):
            if rs[j]:
                ys.append(i + (j - (k - 1) / 2.0) * bar_h)
                xs.append(rs[j])
        # from 1.0 to the ratio: right = ours faster, left = the peer faster
        ax.barh(ys, [x - 1.0 for x in xs], left=1.0, height=bar_h * 0.92, color=color)
        for y, x in zip(ys, xs):
            ax.text(x * 1.02 if x >= 1 else x / 1.02, y, "%.2f" % x, va="center",
                    ha="left" if x >= 1 else "right", fontsize=6)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ticks = [t for t in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if lo <= t <= hi]
    ax.set_xticks(ticks)
    ax.set_xticklabels(["%g" % t for t in ticks])
    ax.minorticks_off()
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_yticks(range(n))
    ax.set_yticklabels([g[0] for g in groups], fontsize=7)
    for i in range(1, n):
        if groups[i][0].split()[:4] != groups[i - 1][0].split()[:4]:
            ax.axhline(i - 0.5, color="#dddddd", linewidth=0.6)
    ax.set_xlabel("peer median / ours median (log scale; right of 1.0 = ours faster)")
    ax.set_title("syncbn vs peers: peer median / ours median per row of %s%s" % (
        os.path.basename(src), "\n" + subtitle if subtitle else ""), fontsize=9, pad=22)
    ax.grid(axis="x", color="#e4e4e4", linewidth=0.6)
    ax.set_axisbelow(True)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=c, label=l) for _, l, c in PEERS], loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=k, fontsize=8, frameon=False)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    fig.savefig(dst, dpi=110)
    print("wrote %s (%d rows)" % (dst, n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
