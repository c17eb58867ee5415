#!/usr/bin/env python3
"""Driver of the side-by-side batch-norm benchmark (standard library only).

Runs, one after the other (never concurrently), for each shape, dtype and thread count
in turn (so that a noisy stretch of the machine falls on ours and on PyTorch alike, not
on one of them; each turn is the 6 rows of 2 layouts x 3 modes):
  1. build/release/bench_ops --shape S --dtypes D --threads T
       this project, the plain reference kernels and oneDNN on the same buffers
  2. /usr/bin/python3 bench/peers/torch_bn.py --shape S --dtypes D --threads T   (PyTorch CPU), with
       GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:
       glibc.malloc.trim_threshold=4294967296
then bench_ops --syncbn-only: the SyncBN layer over 2 in-process ranks, and
  3. mpirun -np 2 bench_ops --syncbn-mpi   (when mpirun exists)
  4. /usr/bin/python3 bench/peers/syncbn_torch_bench.py   (when torch is there):
       syncbn.torch.SyncBatchNorm over 2 gloo processes against torch.nn.BatchNorm2d
       on one rank's half, and the per-call overhead of the Python layer
then merges the rows by (shape, dtype, threads, layout, mode), prints the table and
writes build/bench/results.csv (merged), build/bench/raw.csv (every row) and
build/bench/summary.png (bench/plot_summary.py, run by /usr/bin/python3 with Debian's
python3-matplotlib; skipped with a note when matplotlib is missing, never an error).
The header names the machine: CPU model, CPUs, the L1d/L2/L3 sizes of cpu0 with the
CPUs sharing each (from /sys, else sysconf: "?" where neither says), and the cache sizes and
kernels `syncbn info` reports (the sizes the library plans with).

Two byte floors, E = numel * element size (x, y, dy, dx each E):
  two-pass  fwd-train 3E (read x for the statistics, read x again, write y),
            bwd 5E (read dy and x for the reductions, read them again, write dx),
            eval 2E (read x, write y): what a schedule that streams the tensor
            twice must move when the tensor does not stay in cache;
  one-pass  fwd-train 2E, bwd 3E, eval 2E: every tensor crossed once, the least any
            schedule can move (the second pass served from cache).
Columns: ours ms (min/median); 2-pass GB/s = two-pass floor / our median (the
former "GB/s"); % 1-pass floor = (one-pass floor / our median) / B_ref, where B_ref,
the measured reference bandwidth, is the highest two-pass GB/s the plain reference
kernels (bench_ref.c, which do move the two-pass bytes) reached in any mode on the
same shape, dtype, thread count and layout: 100% = ours takes the time an ideal
one-pass kernel streaming at the reference's rate would take (above 100% is possible
when the reference is slower than the memory system); % of ref = ref median / ours
median; x torch, x oneDNN = peer median / ours median (above 1: ours is faster).
results.csv has both floors (floor_bytes = two-pass, floor_bytes_1pass), gbps_2pass
(= ours_gbps), gbps_1pass, ref_bw_gbps (B_ref) and pct_1pass_floor.
A peer that is not installed is printed as "missing"; a case a peer has no
implementation for as "unsup"; a failed case as "error".
"""
import argparse
import csv
import functools
import io
import math
import os
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUNABLES = ("glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:"
            "glibc.malloc.trim_threshold=4294967296")
FIELDS = ["impl", "shape", "dtype", "threads", "layout", "mode", "min_ms", "med_ms", "reps",
          "floor_bytes", "gbps", "status", "note"]
MODE_ORDER = {"fwd-train": 0, "bwd": 1, "eval": 2}
FLOOR_2PASS = {"fwd-train": 3, "bwd": 5, "eval": 2}  # bench_ops.c floor_factor
FLOOR_1PASS = {"fwd-train": 2, "bwd": 3, "eval": 2}


def log(msg=""):
    print(msg)
    sys.stdout.flush()


def load_avg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _kib(text):
    """'32K' / '1024K' / '32M' (sysfs) or a byte count (sysconf) -> 'N KiB' / 'N MiB'."""
    t = str(text).strip().upper()
    mult = {"K": 1024, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    try:
        b = int(t[:-1] if mult > 1 else t) * mult
    except ValueError:
        return t
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return "%d MiB" % (b >> 20)
    return "%d KiB" % (b >> 10) if b % 1024 == 0 else "%d B" % b


def _cpu_list_len(text):
    n = 0
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            n += int(hi) - int(lo) + 1
        elif part.strip():
            n += 1
    return n


def machine_info(build):
    """One line: CPU model, CPUs, L1d/L2/L3 of cpu0 and who shares them, the kernel ISA."""
    model = None
    info = _read("/proc/cpuinfo") or ""
    for line in info.splitlines():
        if line.split(":", 1)[0].strip() in ("model name", "Model name", "cpu model"):
            model = line.split(":", 1)[1].strip()
            break
    if not model and shutil.which("lscpu"):
        try:
            out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, universal_newlines=True,
                                 timeout=10).stdout
            model = next((l.split(":", 1)[1].strip() for l in out.splitlines()
                          if l.startswith("Model name:")), None)
        except (OSError, subprocess.SubprocessError):
            pass
    ncpu = os.cpu_count() or 0
    usable = usable_cpus(build)
    cpus = "%d CPUs" % ncpu + ("" if usable == ncpu else " (usable: %s)" % (
        syncbn_info_field(build, "cpus") or "%d in the affinity mask" % usable))
    caches = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = sorted(e for e in os.listdir(base) if e.startswith("index"))
    except OSError:
        entries = []
    for e in entries:
        level, kind = _read(os.path.join(base, e, "level")), _read(os.path.join(base, e, "type"))
        size = _read(os.path.join(base, e, "size"))
        shared = _read(os.path.join(base, e, "shared_cpu_list"))
        if not level or not size or kind == "Instruction":
            continue
        name = "L1d" if level == "1" else "L" + level
        n = _cpu_list_len(shared) if shared else 0
        who = ("per CPU" if n == 1 else "shared by CPUs %s" % shared) if shared else "sharing ?"
        caches[name] = "%s %s %s" % (name, _kib(size), who)
    for name, key in (("L1d", "SC_LEVEL1_DCACHE_SIZE"), ("L2", "SC_LEVEL2_CACHE_SIZE"),
                      ("L3", "SC_LEVEL3_CACHE_SIZE")):
        if name not in caches:
            try:
                v = os.sysconf(key)
            except (ValueError, OSError):
                v = 0
            caches[name] = "%s %s" % (name, _kib(v) if v and v > 0 else "?")
    kernels = syncbn_info_field(build, "kernels") or "?"
    planned = syncbn_info_field(build, "caches") or "?"
    # the sizes syncbn plans with (syncbn info: checked, capped where the machine
    # misreports them) beside what the kernel and libc say
    return "# machine: %s, %s; %s; syncbn plans with %s; kernels: %s" % (
        model or "unknown CPU", cpus, ", ".join(caches[k] for k in ("L1d", "L2", "L3")), planned,
        kernels)


@functools.lru_cache(maxsize=None)
def _syncbn_info(build):
    """The output of the build's `syncbn info` (run once a build), or "" without one."""
    exe = os.path.join(build, "syncbn") if build else ""
    if not exe or not os.access(exe, os.X_OK):
        return ""
    try:
        return subprocess.run([exe, "info"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def syncbn_info_field(build, name):
    """The text after "name:" in `syncbn info` of the build, or None."""
    return next((l.split(":", 1)[1].strip() for l in _syncbn_info(build).splitlines()
                 if l.startswith(name + ":")), None)


def usable_cpus(build=None):
    """The CPUs this process may use: syncbn's count (the affinity mask within the cgroup's
    CPU quota) when the build has `syncbn`, else the affinity mask (all CPUs where that is
    unknown)."""
    text = syncbn_info_field(build, "cpus")
    if text and text.split()[0].isdigit():
        return int(text.split()[0])
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_threads(build=None):
    """1, 2, 4, ... below the CPUs this process may use, then that count itself."""
    cpus = usable_cpus(build)
    counts, t = [], 1
    while t < cpus:
        counts.append(t)
        t *= 2
    counts.append(cpus)
    return ",".join(str(c) for c in counts)


def read_shape_files(paths):
    """[(shape text, count)] in file order; count defaults to 1."""
    out = []
    for path in paths:
        with open(path) as f:
            for line in f:
                tok = line.split("#", 1)[0].split()
                if not tok:
                    continue
                count = int(tok[1]) if len(tok) > 1 else 1
                out.append((tok[0].lower(), count))
    return out


def unique_shapes(shapes):
    """The shapes of [(shape text, count)] once each, in file order."""
    seen, out = set(), []
    for s, _ in shapes:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def run(cmd, env=None, timeout=None, label=""):
    """Runs cmd, shows it, returns (rc, stdout text, seconds). stderr passes through."""
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, timeout=timeout, cwd=ROOT,
                           universal_newlines=True)
        rc, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc = "timeout"
    except OSError as e:
        out, rc = "", "cannot run: %s" % e
    dt = time.time() - t0
    log("  -> %s: exit %s after %.1f s" % (label, rc, dt))
    return rc, out, dt


def parse_rows(text):
    """CSV rows and '#' notes from a bench_ops / torch_bn.py output."""
    rows, notes = [], []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            notes.append(line)
            continue
        if line.startswith("impl,"):
            continue
        rec = next(csv.reader(io.StringIO(line)))
        if len(rec) != len(FIELDS):
            notes.append("# unparsed: " + line)
            continue
        rows.append(dict(zip(FIELDS, rec)))
    return rows, notes


def fnum(v):
    try:
        x = float(v)
        return x if math.isfinite(x) else None
    except (TypeError, ValueError):
        return None


def peer_cell(peer, ours_med, why_missing):
    if peer is None:
        return "missing" if why_missing else "-"
    if peer["status"] == "unsupported":
        return "unsup"
    if peer["status"] != "ok":
        return peer["status"]
    med = fnum(peer["med_ms"])
    if med is None or ours_med is None:
        return "-"
    return "%.2fx" % (med / ours_med)


def main():
    ap = argparse.ArgumentParser(description="side-by-side CPU batch-norm benchmark")
    ap.add_argument("--shapes", nargs="+", help="shape files (default bench/shapes/quick.txt)")
    ap.add_argument("--quick", action="store_true", help="bench/shapes/quick.txt")
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"),
                    help="build directory holding bench_ops")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "results.csv"))
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    ap.add_argument("--plot-python", default="/usr/bin/python3",
                    help="interpreter with matplotlib for build/bench/summary.png")
    ap.add_argument("--no-plot", action="store_true", help="do not draw summary.png")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-mpi", action="store_true")
    ap.add_argument("--no-syncbn", action="store_true", help="skip the SyncBN layer rows")
    ap.add_argument("--no-aclnn", action="store_true", help="skip the aclnn rows of bench_ops")
    ap.add_argument("--dtypes", default="f32,bf16", help="of f32,bf16,f16")
    ap.add_argument("--threads", default=None,
                    help="thread counts (default 1, 2, 4, ... up to the CPUs, and the CPUs)")
    ap.add_argument("--layouts", default="cf,cl")
    ap.add_argument("--modes", default="fwd-train,bwd,eval")
    ap.add_argument("--min-reps", default="20")
    ap.add_argument("--min-time", default="0.3")
    ap.add_argument("--max-time", default="1.0")
    ap.add_argument("--timeout", type=float, default=1500, help="seconds per program")
    ap.add_argument("--omp-passive", action="store_true",
                    help="OMP_WAIT_POLICY=passive for the OpenMP peers (oneDNN, torch): on a "
                         "busy machine their spinning barriers can cost 10-40x at 2 threads")
    a = ap.parse_args()
    if a.threads is None:
        a.threads = default_threads(a.build)
    for opt, text, known in (("--dtypes", a.dtypes, ("f32", "bf16", "f16")),
                             ("--layouts", a.layouts, ("cf", "cl")),
                             ("--modes", a.modes, ("fwd-train", "bwd", "eval"))):
        bad = [i for i in text.split(",") if i not in known]
        if bad:  # the programs would refuse it too, after the build and the other pieces
            ap.error("%s: unknown %r in %r (one or more of %s)" % (opt, bad[0], text,
                                                                   ",".join(known)))
    shape_files = list(a.shapes or [])
    if a.quick or not shape_files:
        shape_files.append(os.path.join(ROOT, "bench", "shapes", "quick.txt"))
    shape_files = [os.path.abspath(p) for p in shape_files]
    shapes = read_shape_files(shape_files)
    counts = {}
    for s, c in shapes:
        counts[s] = counts.get(s, 0) + c
    timing = ["--layouts", a.layouts, "--modes", a.modes, "--min-reps", a.min_reps,
              "--min-time", a.min_time, "--max-time", a.max_time]
    matrix = ["--dtypes", a.dtypes, "--threads", a.threads] + timing
    ours_only = ["--no-aclnn"] if a.no_aclnn else []
    # bench_ops and torch take turns on each (shape, dtype, threads): a noisy stretch of a
    # shared machine (medians 1.3-2.8x the minimums on 2-thread rows of a VM) then falls on
    # both sides of a few rows rather than on one side of a whole shape
    pieces = [(d, t) for d in a.dtypes.split(",") for t in a.threads.split(",")]

    log("# run_bench.py %s; load average before: %s; %d shapes from %s" % (
        time.strftime("%Y-%m-%d %H:%M:%S"), load_avg(), len(shapes),
        ", ".join(os.path.relpath(p, ROOT) for p in shape_files)))
    machine = machine_info(a.build)
    log(machine)
    log("# byte floors (E = numel * element size): two-pass fwd-train 3E, bwd 5E, eval 2E "
        "(2-pass GB/s); one-pass fwd-train 2E, bwd 3E, eval 2E (% 1-pass floor, against the "
        "reference kernels' best measured GB/s on the row's shape/dtype/T/layout)")
    rows, notes, missing = [], [], {}
    base_env = dict(os.environ)
    if a.omp_passive:
        base_env["OMP_WAIT_POLICY"] = "passive"
        log("# OMP_WAIT_POLICY=passive for bench_ops (oneDNN) and torch (--omp-passive)")
    busy = fnum(load_avg().split()[0]) or 0.0
    if busy > 1.5:
        notes.append("# WARNING: the machine was busy before the run (1-min load %.2f on %s "
                     "cpus): 2-thread OpenMP peers (oneDNN, torch) spin at barriers and can be "
                     "10-40x slower than on a quiet machine; see --omp-passive" % (
                         busy, os.cpu_count()))
    exe = os.path.join(a.build, "bench_ops")
    if not os.access(exe, os.X_OK):
        log("error: %s not built (make release)" % exe)
        return 1

    # 1, 2. this project, ref, oneDNN, then PyTorch, shape by shape
    torch_env = None
    if a.no_torch:
        missing["torch"] = "--no-torch"
    elif not os.access(a.torch_python, os.X_OK):
        missing["torch"] = "%s not found" % a.torch_python
    else:
        torch_env = dict(base_env, GLIBC_TUNABLES=TUNABLES)
        log("# torch runs with GLIBC_TUNABLES=%s, after bench_ops on each (shape, dtype, threads)" % TUNABLES)
    ours_rows, torch_rows = [], []
    for shape, (dtype, threads) in [(s, p) for s in unique_shapes(shapes) for p in pieces]:
        piece = ["--shape", shape, "--dtypes", dtype, "--threads", threads] + timing
        what = "%s %s T=%s" % (shape, dtype, threads)
        rc, out, _ = run([exe] + piece + ours_only, env=base_env, timeout=a.timeout,
                         label="bench_ops " + what)
        r, n = parse_rows(out)
        ours_rows += r
        notes += [x for x in n if x not in notes and not x.startswith("# matrix took")]
        if rc != 0:
            notes.append("# bench_ops %s exit status %s (rows so far kept)" % (what, rc))
        if torch_env is None:
            continue
        cmd = [a.torch_python, os.path.join(ROOT, "bench", "peers", "torch_bn.py")] + piece
        rc, out, _ = run(cmd, env=torch_env, timeout=a.timeout, label="torch_bn.py " + what)
        r, n = parse_rows(out)
        torch_rows += r
        notes += [x for x in n if x not in notes]
        if rc != 0:
            notes.append("# torch_bn.py %s exit status %s" % (what, rc))
    rows += ours_rows + torch_rows
    if not any(x["impl"] == "onednn" and x["status"] != "missing" for x in ours_rows):
        missing["onednn"] = next((x["note"] for x in ours_rows if x["impl"] == "onednn"),
                                 "no rows")
    if torch_env is not None and not any(x["status"] == "ok" for x in torch_rows):
        missing["torch"] = next((x["note"] for x in torch_rows), "no rows")
    if not a.no_syncbn:
        rc, out, _ = run([exe, "--syncbn-only"] + matrix, env=base_env, timeout=a.timeout,
                         label="bench_ops --syncbn-only")
        r, n = parse_rows(out)
        rows += r
        notes += n
        if rc != 0:
            notes.append("# bench_ops --syncbn-only exit status %s" % rc)

    # 3. SyncBN layer over MPI
    mpirun = shutil.which("mpirun")
    if a.no_syncbn or a.no_mpi:
        pass
    elif mpirun is None:
        rows.append(dict(zip(FIELDS, ["syncbn-mpi", "-", "f32", "W2", "cf", "fwd+bwd", "", "",
                                      "0", "0", "", "missing", "mpirun not found"])))
    else:
        # performance-baseline.md section 5: root needs --allow-run-as-root; the
        # single-copy mechanism "none" is faster at np=2
        env = dict(base_env, OMPI_MCA_btl_vader_single_copy_mechanism="none")
        cmd = [mpirun, "--allow-run-as-root", "-np", "2", exe, "--syncbn-mpi",
               "--min-reps", a.min_reps, "--min-time", a.min_time, "--max-time", a.max_time]
        log("# mpirun env: OMPI_MCA_btl_vader_single_copy_mechanism=none")
        rc, out, _ = run(cmd, env=env, timeout=300, label="mpirun bench_ops --syncbn-mpi")
        r, n = parse_rows(out)
        rows += r
        notes += n
        if not r:
            rows.append(dict(zip(FIELDS, ["syncbn-mpi", "-", "f32", "W2", "cf", "fwd+bwd", "",
                                          "", "0", "0", "", "error",
                                          "mpirun exit %s and no row" % rc])))
    if not a.no_syncbn:
        traffic_table(exe, base_env)
    # 4. the Python row: syncbn.torch.SyncBatchNorm over 2 gloo processes (torch needed)
    if not (a.no_torch or a.no_syncbn) and "torch" not in missing:
        env = dict(base_env, SBN_LIBRARY=os.path.join(a.build, "libsyncbn.so"))
        cmd = [a.torch_python, os.path.join(ROOT, "bench", "peers", "syncbn_torch_bench.py"),
               "--min-reps", a.min_reps, "--min-time", a.min_time]
        rc, out, _ = run(cmd, env=env, timeout=a.timeout, label="syncbn_torch_bench.py")
        r, n = parse_rows(out)
        rows += r
        notes += n
        if rc != 0:
            notes.append("# syncbn_torch_bench.py exit status %s" % rc)
    log("# load average after: %s" % load_avg())
    rc = report(rows, notes, missing, counts, a.out)
    if not a.no_plot:
        # the machine line without "# machine: " and the kernels' "(usable on this CPU: ...)"
        title = machine[len("# machine: "):].split(" (usable", 1)[0]
        plot(a.plot_python, a.out, "%s; %s" % (title, time.strftime("%Y-%m-%d %H:%M")))
    return rc


def plot(python, csv_path, title):
    """bench/plot_summary.py (summary.png) and, when the run had several thread counts,
    bench/plot_scaling.py (scaling.png), each in its own process (the interpreter with
    matplotlib); never fails."""
    here = os.path.dirname(csv_path)
    jobs = [("plot_summary.py", csv_path, os.path.join(here, "summary.png"))]
    scaling_csv = os.path.join(here, "scaling.csv")
    if os.path.exists(scaling_csv):
        jobs.append(("plot_scaling.py", scaling_csv, os.path.join(here, "scaling.png")))
    for script, src, png in jobs:
        if not os.path.exists(src):
            log("# %s not drawn: no %s" % (os.path.basename(png), src))
            continue
        cmd = [python, os.path.join(ROOT, "bench", script), src, png, title]
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, timeout=300, cwd=ROOT)
            out, rc = p.stdout.strip(), p.returncode
        except (OSError, subprocess.SubprocessError) as e:
            out, rc = str(e), "not run"
        if rc == 0:
            log("wrote %s" % os.path.relpath(png, ROOT))
        else:
            last = out.splitlines()[-1] if out else "exit %s" % rc
            log("# %s not drawn (%s): %s" % (os.path.basename(png), rc, last))


def report(rows, notes, missing, counts, out_path):
    by_key, order = {}, []
    for r in rows:
        if r["impl"].startswith("syncbn-") or r["impl"].startswith("py-"):
            continue
        key = (r["shape"], r["dtype"], r["threads"], r["layout"], r["mode"])
        if key not in by_key:
            by_key[key] = {}
            order.append(key)
        by_key[key][r["impl"]] = r
    # bench_ops' order (shape file order, dtype, layout, threads, mode); torch-only keys last
    log()
    for n in notes:
        log(n)
    for peer, why in sorted(missing.items()):
        log("# %s: missing (%s)" % (peer, why))
    log()
    head = ["shape", "dtype", "T", "layout", "mode", "ours ms (min/med)", "2-pass GB/s",
            "% 1-pass floor", "% of ref", "x torch", "x oneDNN"]
    # B_ref: the reference kernels' best two-pass GB/s per (shape, dtype, threads, layout)
    ref_bw = {}
    for key in order:
        ref = by_key[key].get("ref")
        g = fnum(ref["gbps"]) if ref and ref["status"] == "ok" else None
        if g:
            k4 = key[:4]
            ref_bw[k4] = max(ref_bw.get(k4, 0.0), g)
    table, merged = [], []
    for key in order:
        impls = by_key[key]
        ours, ref = impls.get("syncbn"), impls.get("ref")
        torch, dnnl = impls.get("torch"), impls.get("onednn")
        o_med = fnum(ours["med_ms"]) if ours and ours["status"] == "ok" else None
        r_med = fnum(ref["med_ms"]) if ref and ref["status"] == "ok" else None
        floor2 = fnum((ours or ref or torch or dnnl or {}).get("floor_bytes"))
        floor1 = (floor2 * FLOOR_1PASS[key[4]] / FLOOR_2PASS[key[4]]
                  if floor2 and key[4] in FLOOR_1PASS else None)
        gbps1 = floor1 / (o_med * 1e-3) / 1e9 if floor1 and o_med else None
        bw = ref_bw.get(key[:4])
        pct1 = 100.0 * gbps1 / bw if gbps1 and bw else None
        if ours is None:
            o_cell, gbps = "missing", ""
        elif o_med is None:
            o_cell, gbps = ours["status"], ""
        else:
            o_cell, gbps = "%.3f/%.3f" % (fnum(ours["min_ms"]), o_med), "%.1f" % fnum(ours["gbps"])
        pct = "%.0f%%" % (100.0 * r_med / o_med) if o_med and r_med else "-"
        table.append(list(key) + [o_cell, gbps, "%.0f%%" % pct1 if pct1 else "-", pct,
                                  peer_cell(torch, o_med, "torch" in missing or torch is None),
                                  peer_cell(dnnl, o_med, "onednn" in missing or dnnl is None)])
        rec = {"shape": key[0], "count": counts.get(key[0], ""), "dtype": key[1],
               "threads": key[2], "layout": key[3], "mode": key[4],
               "floor_bytes": (ours or ref or torch or dnnl or {}).get("floor_bytes", ""),
               "floor_bytes_1pass": "%.0f" % floor1 if floor1 else ""}
        for name, r in (("ours", ours), ("ref", ref), ("torch", torch), ("onednn", dnnl)):
            rec[name + "_status"] = r["status"] if r else "missing"
            for f in ("min_ms", "med_ms", "reps", "gbps"):
                rec["%s_%s" % (name, f)] = r[f] if r else ""
            rec[name + "_note"] = r["note"] if r else missing.get(name, "")
        rec["gbps_2pass"] = "%.2f" % (floor2 / (o_med * 1e-3) / 1e9) if floor2 and o_med else ""
        rec["gbps_1pass"] = "%.2f" % gbps1 if gbps1 else ""
        rec["ref_bw_gbps"] = "%.2f" % bw if bw else ""
        rec["pct_1pass_floor"] = "%.1f" % pct1 if pct1 else ""
        rec["pct_of_ref"] = "%.1f" % (100.0 * r_med / o_med) if o_med and r_med else ""
        for name, r in (("torch", torch), ("onednn", dnnl)):
            p_med = fnum(r["med_ms"]) if r and r["status"] == "ok" else None
            rec["x_" + name] = "%.3f" % (p_med / o_med) if p_med and o_med else ""
        merged.append(rec)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *table)] if table else []
    log(" | ".join(h.ljust(w) for h, w in zip(head, widths)))
    log("-+-".join("-" * w for w in widths))
    for line in table:
        log(" | ".join(str(x).ljust(w) for x, w in zip(line, widths)))
    log("(cf = channels-first NCHW, cl = channels-last NHWC; a 2-D NxC tensor is listed as cf; "
        "2-pass GB/s = 3E/5E/2E over our median; % 1-pass floor = 2E/3E/2E over our median as a "
        "% of the reference kernels' best GB/s on the same shape/dtype/T/layout; "
        "x peer = peer median / ours median, above 1 = ours faster)")

    summarize(merged, counts)
    scaling(merged, out_path)
    syncbn_table(rows, by_key)
    python_table(rows)
    aclnn_table(order, by_key)

    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    if merged:
        with open(out_path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(merged[0].keys()))
            w.writeheader()
            w.writerows(merged)
    raw = os.path.join(os.path.dirname(out_path), "raw.csv")
    with open(raw, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    log()
    log("wrote %s (merged, %d rows) and %s (every row, %d)" % (
        os.path.relpath(out_path, ROOT), len(merged), os.path.relpath(raw, ROOT), len(rows)))
    return 0


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarize(merged, counts):
    """Geometric means per mode, and count-weighted totals when the shape files have counts."""
    log()
    log("geometric means over the rows above (n = rows with both numbers):")
    for mode in ("fwd-train", "bwd", "eval"):
        sel = [m for m in merged if m["mode"] == mode]
        if not sel:
            continue
        parts = []
        for label, col in (("% 1-pass floor", "pct_1pass_floor"), ("% of ref", "pct_of_ref"),
                           ("x torch", "x_torch"), ("x oneDNN", "x_onednn")):
            vals = [fnum(m[col]) for m in sel if fnum(m[col])]
            g = geomean(vals)
            text = "-" if not g else ("%.0f%%" % g) if col.startswith("pct") else ("%.2fx" % g)
            parts.append("%s %s (n=%d)" % (label, text, len(vals)))
        below = sum(1 for m in sel if fnum(m["x_torch"]) and fnum(m["x_torch"]) < 1)
        parts.append("rows below torch %d" % below)
        # torch runs in its own process after each piece of the C matrix, so a noisy machine can
        # load one and not the other: the ratio of the minimums is less exposed
        mins = [fnum(m["torch_min_ms"]) / fnum(m["ours_min_ms"]) for m in sel
                if fnum(m.get("torch_min_ms")) and fnum(m.get("ours_min_ms"))]
        if mins:
            parts.append("x torch by minimums %.2fx, %d below" %
                         (geomean(mins), sum(1 for v in mins if v < 1)))
        log("  %-9s  %s" % (mode, "; ".join(parts)))
    if not any(c > 1 for c in counts.values()):
        return
    log()
    log("count-weighted totals (sum over shapes of count x median ms; a network's BN layers):")
    groups = {}
    for m in merged:
        groups.setdefault((m["dtype"], m["threads"], m["layout"], m["mode"]), []).append(m)
    log("  dtype | T | layout | mode      | ours ms | ref ms  | torch ms | oneDNN ms")
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], MODE_ORDER.get(k[3], 9))):
        cells = []
        for name in ("ours", "ref", "torch", "onednn"):
            tot, ok = 0.0, True
            for m in groups[key]:
                v = fnum(m[name + "_med_ms"])
                if v is None:
                    ok = False
                    break
                tot += v * int(m["count"] or 1)
            cells.append("%.2f" % tot if ok else "-")
        log("  %-5s | %s | %-6s | %-9s | %7s | %7s | %8s | %9s" % (key + tuple(cells)))


def scaling(merged, out_path):
    """Per thread count: geomeans against torch and the reference; then, per row (shape, dtype,
    layout, mode), the speed-up from the fewest to each larger thread count for ours, the
    reference kernels and each peer (its own time at the fewest / its time at T), written to
    scaling.csv beside results.csv."""
    counts = sorted({int(m["threads"]) for m in merged if str(m["threads"]).isdigit()})
    if len(counts) < 2:
        return
    log()
    log("by thread count (geometric means over that count's rows):")
    for t in counts:
        sel = [m for m in merged if m["threads"] == str(t)]
        xt = [fnum(m["x_torch"]) for m in sel if fnum(m["x_torch"])]
        pr = [fnum(m["pct_of_ref"]) for m in sel if fnum(m["pct_of_ref"])]
        below = [m for m in sel if fnum(m["x_torch"]) and fnum(m["x_torch"]) < 1]
        worst = min(xt) if xt else None
        log("  T=%-3d x torch %s (n=%d), rows below torch %d, worst %s; %% of ref %s" % (
            t, "%.2fx" % geomean(xt) if xt else "-", len(xt), len(below),
            "%.2fx" % worst if worst else "-", "%.0f%%" % geomean(pr) if pr else "-"))
    base = counts[0]
    table = {}
    for m in merged:
        k = (m["shape"], m["dtype"], m["layout"], m["mode"])
        table.setdefault(k, {})[int(m["threads"])] = m
    out, lines = [], []
    for k in table:
        b = table[k].get(base)
        if b is None:
            continue
        for t in counts[1:]:
            m = table[k].get(t)
            if m is None:
                continue
            rec = {"shape": k[0], "dtype": k[1], "layout": k[2], "mode": k[3],
                   "from_threads": base, "threads": t}
            for name in ("ours", "ref", "torch", "onednn"):
                t0, t1 = fnum(b[name + "_med_ms"]), fnum(m[name + "_med_ms"])
                rec["speedup_" + name] = "%.2f" % (t0 / t1) if t0 and t1 else ""
            out.append(rec)
    if not out:
        return
    log()
    log("speed-up from T=%d (time at T=%d / time at T; medians), per row:" % (base, base))
    head = ["shape", "dtype", "layout", "mode", "T", "ours", "ref", "torch", "oneDNN"]
    cells = [[r["shape"], r["dtype"], r["layout"], r["mode"], str(r["threads"]),
              r["speedup_ours"] or "-", r["speedup_ref"] or "-", r["speedup_torch"] or "-",
              r["speedup_onednn"] or "-"] for r in out]
    widths = [max(len(x) for x in col) for col in zip(head, *cells)]
    log(" | ".join(h.ljust(w) for h, w in zip(head, widths)))
    for c in cells:
        log(" | ".join(x.ljust(w) for x, w in zip(c, widths)))
    for t in counts[1:]:
        sel = [r for r in out if r["threads"] == t]
        parts = []
        for name in ("ours", "ref", "torch", "onednn"):
            g = geomean([fnum(r["speedup_" + name]) for r in sel])
            parts.append("%s %s" % (name, "%.2fx" % g if g else "-"))
        lag = sum(1 for r in sel if fnum(r["speedup_ours"]) and fnum(r["speedup_ref"]) and
                  fnum(r["speedup_ours"]) < fnum(r["speedup_ref"]))
        log("  T=%d geomean speed-up: %s; rows where ours scales less than ref: %d of %d" % (
            t, ", ".join(parts), lag, len(sel)))
    path = os.path.join(os.path.dirname(out_path), "scaling.csv")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(out[0].keys()))
        w.writeheader()
        w.writerows(out)
    log("wrote %s" % os.path.relpath(path, ROOT))


def syncbn_table(rows, by_key):
    layer, seen = [], set()
    for r in rows:
        if r["impl"].startswith("syncbn-") and r["impl"] not in seen:
            seen.add(r["impl"])
            layer.append(r)
    if not layer:
        return
    log()
    log("SyncBN layer, training step = sbn_syncbn_forward + sbn_syncbn_backward, f32 cf, "
        "global batch split over W ranks, each rank compute-serial:")
    for r in layer:
        if r["status"] != "ok":
            log("  %-15s %s: %s" % (r["impl"], r["status"], r["note"]))
            continue
        ops = []
        for mode in ("fwd-train", "bwd"):
            o = by_key.get((r["shape"], "f32", "2", "cf", mode), {}).get("syncbn")
            ops.append(fnum(o["med_ms"]) if o and o["status"] == "ok" else None)
        cmp = ""
        if None not in ops:
            cmp = "; ops fwd-train+bwd with a pool of 2 on the whole batch: %.3f ms" % sum(ops)
        base = next((b for b in layer if b["impl"] == r["impl"][:-len("-repro")]
                     and b["status"] == "ok"), None) if r["impl"].endswith("-repro") else None
        if base is not None:
            cmp += "; %.3fx the default mode's median" % (fnum(r["med_ms"]) / fnum(base["med_ms"]))
        log("  %-20s %s %s: step %.3f/%.3f ms (min/med, %s reps), %.1f GB/s of the 8E floor%s" % (
            r["impl"], r["shape"], r["threads"], fnum(r["min_ms"]), fnum(r["med_ms"]), r["reps"],
            fnum(r["gbps"]), cmp))
        log("  %-20s %s" % ("", r["note"]))


def traffic_table(exe, env):
    """Bytes per rank per layer step for W = 2 .. 256 on the threads backend (bench_ops
    --traffic): the layer's merge allreduce in both modes, flat in W, beside the previous
    allgather exchanges, which grow with W."""
    rc, out, _ = run([exe, "--traffic"], env=env, timeout=300, label="bench_ops --traffic")
    table = {}
    for line in out.splitlines():
        f = line.split(",")
        if len(f) == 6 and f[0] == "traffic" and f[2].isdigit():
            table.setdefault(int(f[2]), {})[f[1]] = (int(f[4]), int(f[5]))
    if not table:
        log("# bench_ops --traffic gave no rows (exit %s)" % rc)
        return
    log()
    log("Bytes per rank per layer step (fwd + bwd, C = 64, threads backend, max over ranks, "
        "headers included), sent / received:")
    log("  %5s | %-21s | %-21s | %-21s" % ("W", "merge (default)", "merge (reproducible)",
                                          "allgather (before)"))
    for w in sorted(table):
        cells = ["%9d / %-9d" % table[w][p] if p in table[w] else "-"
                 for p in ("merge", "merge-repro", "allgather")]
        log("  %5d | %-21s | %-21s | %-21s" % ((w,) + tuple(cells)))


def aclnn_table(order, by_key):
    """The aclnn rows (both phases per call, process-wide pool) against the native path at the
    same thread count, the reference and torch: aclnnBatchNorm/aclnnBatchNormBackward vs
    sbn_batch_norm(_backward), and the SyncBN forward Stats -> GatherStatsWithCounts -> Elemt
    vs the same three native calls."""
    lines = []
    for key in order:
        impls = by_key[key]

        def med(name):
            r = impls.get(name)
            return fnum(r["med_ms"]) if r and r["status"] == "ok" else None
        ref, torch = med("ref"), med("torch")
        for ours, native in (("aclnn", "syncbn"), ("aclnn-syncfwd", "native-syncfwd")):
            a, n = med(ours), med(native)
            if a is None:
                continue
            cells = ["%.3f ms" % a]
            cells.append("%.0f%% of %s" % (100.0 * n / a, native) if n else "native -")
            cells.append("%.0f%% of ref" % (100.0 * ref / a) if ref else "ref -")
            cells.append("%.2fx torch" % (torch / a) if torch else "torch -")
            lines.append("  %-14s %s %s T=%s %s %s: %s" % (ours, key[0], key[1], key[2], key[3],
                                                         key[4], ", ".join(cells)))
    if not lines:
        return
    log()
    log("aclnn path (GetWorkspaceSize + run per call, the process-wide aclnn pool of T threads), "
        "medians:")
    for line in lines:
        log(line)


def python_table(rows):
    py = [r for r in rows if r["impl"].startswith("py-")]
    if not py:
        return
    log()
    log("Python (bench/peers/syncbn_torch_bench.py), forward + backward, one thread per gloo rank:")
    for r in py:
        if r["status"] != "ok":
            log("  %-20s %s: %s" % (r["impl"], r["status"], r["note"]))
            continue
        log("  %-20s %s %s: %.3f/%.3f ms (min/med, %s reps): %s" % (
            r["impl"], r["shape"], r["threads"], fnum(r["min_ms"]), fnum(r["med_ms"]), r["reps"],
            r["note"]))


if __name__ == "__main__":
    sys.exit(main())
