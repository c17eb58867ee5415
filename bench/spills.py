#!/usr/bin/env python3
"""Finds SIMD kernels whose innermost loops keep vectors on the stack (standard library only).

    python3 bench/spills.py [build/release] [--all]

A kernel's accumulators must stay in registers: when the compiler runs out of the 16 ymm
of AVX2 (32 zmm of AVX-512) it keeps some on the stack, and an accumulator there turns its
add or fused multiply-add chain into a store, a reload and the operation, every iteration
(on Zen 3 about 12 cycles instead of 4). Which values the compiler spills depends on the
order of the source, not only on how many are live, so a small edit can bring it back.

For each object of src/kernels/x86 in the build directory, disassembled with objdump, this
takes every innermost loop (a backward jump whose range holds no other one) that does
floating-point vector arithmetic, and counts the vector stores to the stack (%rsp, %rbp)
in it: a store in a loop is a value carried through memory from one iteration to the
next. Loads alone (a loop-invariant value such as a center or a coefficient, reloaded)
cost a load slot, not a chain, and are listed only with --all. The row_chunk kernels of
AVX2 hold a fold tree deeper than the registers by design (row_chunk_avx2.c) and are
reported apart. Exit status 1 when any other kernel stores in an innermost loop, 77 (the
skip status of ctest) when the build has no x86 kernel objects.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

BY_DESIGN = ("row_chunk_avx2.c.o",)  # the fold kept partly on the stack (its file says why)
JUMP = re.compile(r"j\w+\s+([0-9a-f]+) ")
LINE = re.compile(r"\s*([0-9a-f]+):\s*(.*)")
ARITH = re.compile(r"v(fmadd|fmsub|fnmadd|add|sub|mul)\w*p[sd]")
STORE = re.compile(r"vmov\w+\s+%[xyz]mm\d+,.*\(%r[sb]p\)")
LOAD = re.compile(r"\(%r[sb]p\),%[xyz]mm")


def functions(obj):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True,
                         text=True, check=True).stdout
    for chunk in re.split(r"\n(?=[0-9a-f]+ <)", out):
        head = re.match(r"[0-9a-f]+ <([^>]+)>:", chunk)
        if not head:
            continue
        ins = []
        for line in chunk.split("\n")[1:]:
            m = LINE.match(line)
            if m:
                ins.append((int(m.group(1), 16), m.group(2).strip()))
        yield head.group(1), ins


def innermost_loops(ins):
    loops = []
    for addr, text in ins:
        m = JUMP.match(text)
        if m and int(m.group(1), 16) <= addr:
            loops.append((int(m.group(1), 16), addr))
    return [l for l in loops
            if not any(o != l and l[0] <= o[0] and o[1] <= l[1] for o in loops)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default="build/release")
    ap.add_argument("--all", action="store_true", help="also loops that only reload from the stack")
    args = ap.parse_args()
    objs = sorted(glob.glob(os.path.join(args.build, "CMakeFiles", "*", "src", "kernels", "x86",
                                         "*.o")))
    if not objs:
        print("no x86 kernel objects under %s: nothing to check" % args.build)
        return 77
    bad = 0
    seen = set()
    for obj in objs:
        name = os.path.basename(obj)
        if name in seen:  # the same object in the shared and static targets
            continue
        seen.add(name)
        for fn, ins in functions(obj):
            for lo, hi in innermost_loops(ins):
                body = [t for a, t in ins if lo <= a <= hi]
                if not any(ARITH.search(t) for t in body):
                    continue
                stores = sum(1 for t in body if STORE.match(t))
                loads = sum(1 for t in body if LOAD.search(t))
                if not stores and not (args.all and loads):
                    continue
                design = name in BY_DESIGN
                if stores and not design:
                    bad += 1
                print("%-6s %-24s %-48s loop at %#x, %d instructions: %d stack stores, %d loads"
                      % ("design" if design else ("SPILL" if stores else "reload"), name, fn, lo,
                         len(body), stores, loads))
    print("%d innermost loop(s) carry vectors through the stack outside %s"
          % (bad, ", ".join(BY_DESIGN)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
