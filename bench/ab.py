#!/usr/bin/env python3
"""A/B of syncbn's rows of bench_ops: two builds, or one build under two environments.

    /usr/bin/python3 bench/ab.py --a /tmp/base/build/bench_ops [--b build/release/bench_ops]
        [--a-env SBN_ONE_PASS_BYTES=0] [--b-env ...] [--rounds 4] [--out ab.csv]
        -- --shapes bench/shapes/quick.txt --threads 1,2 --modes fwd-train,bwd

Runs A and B in turn, `rounds` times, in the order A B, B A, A B, ... (ABBA), so that a
machine that drifts over the run (other tenants, clock, a neighbour's memory traffic)
weighs on both alike; everything after `--` goes to both bench_ops runs, which time
syncbn alone (--no-aclnn --no-onednn are added). For each row (shape, dtype, threads,
layout, mode) it prints A and B by their best minimum over the rounds, their ratio A/B
(above 1: B is faster), the ratio of the medians' best, and the geometric mean of the
ratios; --out writes the rows as CSV. On a 2-vCPU VM rows that a change does not touch move
by 10-30% between runs (docs/performance.md), so a claim needs rounds that agree, and
rows the change leaves alone beside it as the control. Standard library only.
"""
import argparse
import csv
import math
import os
import subprocess
import sys


def parse_env(items, what):
    env = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            sys.exit("ab.py: %s %r: expected NAME=VALUE" % (what, item))
        env[key] = value
    return env


def run_side(binary, env, args):
    """The syncbn rows of one bench_ops run: {(shape, dtype, threads, layout, mode): (min, med)}."""
    cmd = [binary] + args + ["--no-aclnn", "--no-onednn"]
    full_env = dict(os.environ)
    full_env.update(env)
    proc = subprocess.run(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    if proc.returncode != 0:
        sys.exit("ab.py: %s failed (exit %d): %s" % (" ".join(cmd), proc.returncode,
                                                    proc.stderr.strip()[-400:]))
    rows = {}
    for line in proc.stdout.splitlines():
        f = line.split(",")
        if len(f) < 12 or f[0] != "syncbn" or f[11] != "ok":
            continue
        key, times = tuple(f[1:6]), (float(f[6]), float(f[7]))
        # a row asked for twice (--threads 1,1): its best of both
        rows[key] = tuple(map(min, rows[key], times)) if key in rows else times
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--a", required=True, help="bench_ops of side A")
    ap.add_argument("--b", help="bench_ops of side B (default: the same as A)")
    ap.add_argument("--a-env", action="append", help="NAME=VALUE for side A (repeatable)")
    ap.add_argument("--b-env", action="append", help="NAME=VALUE for side B (repeatable)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", help="CSV of the rows")
    ap.add_argument("bench_args", nargs=argparse.REMAINDER,
                    help="-- then the arguments of both bench_ops runs")
    opt = ap.parse_args()
    args = opt.bench_args[1:] if opt.bench_args[:1] == ["--"] else opt.bench_args
    # absolute paths: a bare name would be looked up on PATH, and ./x and x are one binary
    sides = {"A": (os.path.realpath(opt.a), parse_env(opt.a_env, "--a-env")),
             "B": (os.path.realpath(opt.b or opt.a), parse_env(opt.b_env, "--b-env"))}
    if opt.rounds < 1:
        sys.exit("ab.py: --rounds %d: expected 1 or more" % opt.rounds)
    effective = {name: {k: v for k, v in env.items() if os.environ.get(k) != v}
                 for name, (_, env) in sides.items()}  # what each side changes
    if sides["A"][0] == sides["B"][0] and effective["A"] == effective["B"]:
        sys.exit("ab.py: A and B are the same binary with the same environment")
    for name, (binary, _) in sides.items():
        if not os.access(binary, os.X_OK):
            sys.exit("ab.py: side %s: %s is not an executable" % (name, binary))
    seen = {"A": [], "B": []}
    for r in range(opt.rounds):
        for name in ("A", "B") if r % 2 == 0 else ("B", "A"):
            binary, env = sides[name]
            seen[name].append(run_side(binary, env, args))
            print("# round %d/%d: %s done" % (r + 1, opt.rounds, name), file=sys.stderr)
    keys = [k for k in seen["A"][0] if all(k in s for side in seen.values() for s in side)]
    if not keys:
        sys.exit("ab.py: no syncbn row was measured on both sides")
    out_rows, logs = [], []
    print("%-14s %-5s %3s %-3s %-9s %10s %10s %8s %8s" %
          ("shape", "dtype", "thr", "lay", "mode", "A min ms", "B min ms", "A/B min", "A/B med"))
    for k in keys:
        a_min = min(s[k][0] for s in seen["A"])
        b_min = min(s[k][0] for s in seen["B"])
        a_med = min(s[k][1] for s in seen["A"])
        b_med = min(s[k][1] for s in seen["B"])
        if min(a_min, b_min, a_med, b_med) <= 0.0:  # below bench_ops' printed resolution
            print("%-14s %-5s %3s %-3s %-9s too fast to time (%g, %g ms)" % (k + (a_min, b_min)))
            continue
        ratio, ratio_med = a_min / b_min, a_med / b_med
        logs.append(math.log(ratio))
        out_rows.append(list(k) + [a_min, b_min, ratio, ratio_med])
        print("%-14s %-5s %3s %-3s %-9s %10.4f %10.4f %7.2fx %7.2fx" %
              (k + (a_min, b_min, ratio, ratio_med)))
    if logs:
        print("geomean A/B by minimums %.3fx over %d rows, %d rounds" %
              (math.exp(sum(logs) / len(logs)), len(logs), opt.rounds))
    if opt.out:
        with open(opt.out, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["shape", "dtype", "threads", "layout", "mode", "a_min_ms", "b_min_ms",
                        "a_over_b_min", "a_over_b_med"])
            w.writerows(out_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
