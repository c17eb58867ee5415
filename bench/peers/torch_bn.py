#!/usr/bin/python3
"""PyTorch CPU peer of bench_ops: the same shape x dtype x layout x threads x mode
matrix, printed as CSV rows in bench_ops' format

    impl,shape,dtype,threads,layout,mode,min_ms,med_ms,reps,floor_bytes,gbps,status,note

Run it with the Debian interpreter (/usr/bin/python3, which has python3-torch).
  fwd-train  F.batch_norm(x, rm, rv, w, b, training=True) under no_grad
  bwd        torch.autograd.grad(y, (x, w, b), dy) of a training forward; only the
             backward is timed (the graph is built once and retained)
  eval       F.batch_norm(..., training=False) under no_grad
Channels-last is x.contiguous(memory_format=torch.channels_last) (and dy too) for
4-D shapes; a 2-D (N, C) tensor has one layout, reported as cf. bf16 and f16 runs use
bf16 / float16 activations with f32 weight, bias and running stats; a dtype this torch's
CPU batch norm does not implement (float16 on torch 1.13) gives rows marked unsupported.
Hot: the same tensors every repetition. The malloc settings matter a lot here (freed gradient buffers
otherwise go back to the OS and are faulted in again): bench/run_bench.py sets
GLIBC_TUNABLES and this script prints what it ran with.
"""
import argparse
import os
import sys
import time

MODES = ("fwd-train", "bwd", "eval")
DTYPES = ("f32", "bf16", "f16")
ESIZE = {"f32": 4, "bf16": 2, "f16": 2}
FLOOR = {"fwd-train": 3, "bwd": 5, "eval": 2}
MAX_SAMPLES = 20000


def parse_shape(text):
    dims = [int(v) for v in text.lower().split("x")]
    if len(dims) not in (2, 4) or min(dims) <= 0:
        raise ValueError("bad shape %r" % text)
    return dims


def read_shapes(paths, specs):
    shapes = []
    for path in paths:
        with open(path) as f:
            for line in f:
                tok = line.split("#", 1)[0].split()
                if tok:
                    shapes.append(parse_shape(tok[0]))
    shapes.extend(parse_shape(s) for s in specs)
    return shapes


def shape_text(dims):
    return "x".join(str(d) for d in dims)


def row(impl, shape, dtype, threads, layout, mode, samples, floor, status, note):
    note = note.replace(",", ";").replace("\n", " ")
    if samples:
        s = sorted(samples)
        n = len(s)
        med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
        print("%s,%s,%s,%s,%s,%s,%.4f,%.4f,%d,%.0f,%.2f,%s,%s" % (
            impl, shape, dtype, threads, layout, mode, 1e3 * s[0], 1e3 * med, n, floor,
            floor / med / 1e9, status, note))
    else:
        print("%s,%s,%s,%s,%s,%s,,,0,%.0f,,%s,%s" % (
            impl, shape, dtype, threads, layout, mode, floor, status, note))
    sys.stdout.flush()


def measure(fn, opts):
    """Warm up (>= 2 runs and >= 30 ms, at most 0.5 s), then time single calls until
    >= min_reps and >= min_time, or max_time has passed with >= 5 runs."""
    clock = time.perf_counter
    t0 = clock()
    reps = 0
    while reps < 2 or (clock() - t0 < 0.03 and clock() - t0 < 0.5):
        fn()
        reps += 1
    samples = []
    busy = 0.0
    while True:
        a = clock()
        fn()
        d = clock() - a
        samples.append(d)
        busy += d
        n = len(samples)
        if (n >= opts.min_reps and busy >= opts.min_time) or (busy >= opts.max_time and n >= 5) \
                or n >= MAX_SAMPLES:
            return samples


def cpu_capability(torch):
    try:
        for line in torch.__config__.show().splitlines():
            if "CPU capability" in line:
                return line.split(":", 1)[1].strip()
    except Exception:  # noqa: BLE001 - informational only
        pass
    return "unknown"


def pick(ap, opt, text, known):
    """The items of a comma-separated option in `known`'s order; an unknown item is an
    error naming it (a typo must not become a run with rows missing)."""
    items = text.split(",")
    bad = [i for i in items if i not in known]
    if bad or not text:
        ap.error("%s: unknown %r in %r (one or more of %s)" % (
            opt, bad[0] if bad else text, text, ",".join(known)))
    return [k for k in known if k in items]


def unsupported(e):
    """True for the error torch raises for a dtype its CPU kernel does not implement."""
    return isinstance(e, (RuntimeError, NotImplementedError)) and "not implemented for" in str(e)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", nargs="*", default=[], help="shape files (one shape a line)")
    ap.add_argument("--shape", action="append", default=[], help="NxCxHxW or NxC")
    ap.add_argument("--dtypes", default="f32,bf16", help="of " + ",".join(DTYPES))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--layouts", default="cf,cl")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--min-reps", type=int, default=20)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--max-time", type=float, default=1.0)
    opts = ap.parse_args()
    shapes = read_shapes(opts.shapes, opts.shape)
    dtypes = pick(ap, "--dtypes", opts.dtypes, DTYPES)
    threads = [int(t) for t in opts.threads.split(",") if t]
    layouts = pick(ap, "--layouts", opts.layouts, ("cf", "cl"))
    modes = pick(ap, "--modes", opts.modes, MODES)

    print("impl,shape,dtype,threads,layout,mode,min_ms,med_ms,reps,floor_bytes,gbps,status,note")
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - any import failure means "missing"
        print("# torch: cannot import torch with %s: %s" % (sys.executable, e))
        for dims in shapes:
            numel = 1
            for d in dims:
                numel *= d
            for dt in dtypes:
                for lay in (layouts if len(dims) == 4 else ["cf"]):
                    for t in threads:
                        for mode in modes:
                            row("torch", shape_text(dims), dt, t, lay, mode, None,
                                FLOOR[mode] * numel * ESIZE[dt], "missing",
                                "torch not importable")
        return 0

    cap = cpu_capability(torch)
    print("# torch %s (%s); ATen CPU capability: %s (ATEN_CPU_CAPABILITY=%s); mkldnn %s" % (
        torch.__version__, sys.executable, cap, os.environ.get("ATEN_CPU_CAPABILITY", "unset"),
        torch.backends.mkldnn.is_available()))
    print("# torch GLIBC_TUNABLES=%s" % os.environ.get("GLIBC_TUNABLES", "unset (glibc defaults)"))
    eps, momentum = 1e-5, 0.1
    g = torch.Generator().manual_seed(1)
    for dims in shapes:
        numel = 1
        for d in dims:
            numel *= d
        c = dims[1]
        base_x = (torch.rand(dims, generator=g) * 2 - 1) + 0.5
        base_dy = (torch.rand(dims, generator=g) * 2 - 1) * 0.5
        for dt in dtypes:
            tdt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dt]
            esize = ESIZE[dt]
            for lay in (layouts if len(dims) == 4 else ["cf"]):
                fmt = torch.channels_last if lay == "cl" else torch.contiguous_format
                x = base_x.to(tdt).contiguous(memory_format=fmt)
                dy = base_dy.to(tdt).contiguous(memory_format=fmt)
                w = torch.tensor([1.0 + 0.25 * (i % 3) for i in range(c)])
                b = torch.tensor([0.125 * (i % 4) - 0.25 for i in range(c)])
                rm = torch.full((c,), 0.5)
                rv = torch.ones(c)
                for t in threads:
                    torch.set_num_threads(t)
                    for mode in modes:
                        floor = FLOOR[mode] * numel * esize
                        note = "ATen %s; torch threads %d" % (cap, torch.get_num_threads())
                        try:
                            if mode == "bwd":
                                xg = x.detach().requires_grad_(True)
                                wg = w.detach().requires_grad_(True)
                                bg = b.detach().requires_grad_(True)
                                y = F.batch_norm(xg, rm, rv, wg, bg, training=True,
                                                 momentum=momentum, eps=eps)
                                dyy = dy.contiguous(memory_format=torch.channels_last) \
                                    if lay == "cl" and y.is_contiguous(
                                        memory_format=torch.channels_last) else dy

                                def fn(y=y, xg=xg, wg=wg, bg=bg, dyy=dyy):
                                    torch.autograd.grad(y, (xg, wg, bg), dyy, retain_graph=True)
                            else:
                                training = mode == "fwd-train"

                                def fn(training=training):
                                    with torch.no_grad():
                                        F.batch_norm(x, rm, rv, w, b, training=training,
                                                     momentum=momentum, eps=eps)
                            samples = measure(fn, opts)
                            row("torch", shape_text(dims), dt, t, lay, mode, samples, floor,
                                "ok", note)
                        except Exception as e:  # noqa: BLE001 - reported per case
                            row("torch", shape_text(dims), dt, t, lay, mode, None, floor,
                                "unsupported" if unsupported(e) else "error",
                                "%s: %s" % (type(e).__name__, e))
                        finally:
                            y = None
    return 0


if __name__ == "__main__":
    sys.exit(main())
