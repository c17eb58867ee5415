"""The Python row of the benchmark: syncbn.torch.SyncBatchNorm under torch.distributed.

Two gloo processes on 127.0.0.1 each hold half of an N x C x H x W fp32 batch (default
32x64x56x56, so 16x64x56x56 per rank) and time forward + backward of
``syncbn.torch.SyncBatchNorm`` (synchronised: one exact merge forward, one backward,
each one SUM all_reduce once a step repeats the previous one: the speculative merge of
src/comm/comm_spec.h; a MAX and a SUM when its guess fails) against
``torch.nn.BatchNorm2d`` forward + backward on the same local half, unsynchronised,
which is what CPU users fall back to today. Both run in the same processes at the same
time, one compute thread per process (2 processes on 2 cores). A tiny 2x4x2x2 batch
gives the per-call overhead of the Python layer and the collectives in microseconds,
split into the module over a group of one rank (no collective) and the collectives
alone, and against the floor of any SyncBN over the group: a plain synchronised batch
norm in torch ops with one all_reduce forward and one backward (plain_sync_bn). Then,
for W = 2, 4, 8 (--traffic-worlds), the bytes each rank hands torch.distributed per
forward+backward of SyncBatchNorm(64). Prints run_bench.py's CSV rows (impl
py-syncbn-torch and py-torch-bn2d-local, mode fwd+bwd, threads "W2") and '#' notes.
"""
import argparse
import os
import socket
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_steps(step, min_reps, min_time, agree):
    """Median and min of `step` over at least min_reps calls and min_time seconds.

    Every rank must make the same number of calls (each step is a collective), so the
    decision to go on is agreed before each call: agree(wanted) is True when any rank
    wants another one (it is also the barrier that lines the ranks up before timing)."""
    for _ in range(3):  # warm-up (first calls allocate)
        step()
    times = []
    start = time.perf_counter()
    while True:
        wanted = (len(times) < min_reps or time.perf_counter() - start < min_time) and \
            len(times) < 10 * min_reps
        if not agree(wanted):
            break
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), len(times)


def agree_any(dist, torch):
    """agree(wanted) for time_steps: an all_reduce MAX of the ranks' wishes."""
    flag = torch.zeros(1, dtype=torch.int64)

    def agree(wanted):
        flag.fill_(int(wanted))
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return bool(flag.item())
    return agree


def plain_sync_bn(torch, dist):
    """The least a synchronised batch norm over torch.distributed can do, written in torch
    ops: the local sums, one all_reduce of [sum x, sum x^2, n] (float64) in the forward and
    one of [sum dy, sum dy*xhat] in the backward, PyTorch's formulas; no checks, no exact
    merge. Its per-call time on a tiny batch is the floor of any SyncBN layer over the
    same process group: torch's own arithmetic plus two collectives."""

    class PlainSyncBN(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias, eps):
            dims = [0] + list(range(2, x.dim()))
            xd = x.double()
            n = x.numel() // x.shape[1]
            buf = torch.cat([xd.sum(dims), (xd * xd).sum(dims),
                             torch.tensor([float(n)], dtype=torch.float64)])
            dist.all_reduce(buf)
            c = x.shape[1]
            total = buf[2 * c]
            mean = buf[:c] / total
            invstd = torch.rsqrt((buf[c:2 * c] / total - mean * mean).clamp_min(0) + eps)
            shape = [1, c] + [1] * (x.dim() - 2)
            xhat = (x - mean.float().view(shape)) * invstd.float().view(shape)
            ctx.save_for_backward(xhat, weight, invstd.float(), total)
            return xhat * weight.view(shape) + bias.view(shape)

        @staticmethod
        def backward(ctx, dy):
            xhat, weight, invstd, total = ctx.saved_tensors
            dims = [0] + list(range(2, dy.dim()))
            c = dy.shape[1]
            shape = [1, c] + [1] * (dy.dim() - 2)
            dbias, dweight = dy.sum(dims), (dy * xhat).sum(dims)
            buf = torch.cat([dbias, dweight]).double()
            dist.all_reduce(buf)
            gsum, gdot = (buf[:c] / total).float(), (buf[c:] / total).float()
            dx = (dy - gsum.view(shape) - xhat * gdot.view(shape)) * \
                (invstd * weight).view(shape)
            return dx, dweight, dbias, None

    return PlainSyncBN.apply


def worker(rank, world, port, args, queue):
    import torch
    import torch.distributed as dist
    import syncbn.torch as sbt

    torch.set_num_threads(1)
    os.environ["SBN_NUM_THREADS"] = "1"
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=world)
    n, c, h, w = args.shape
    local = n // world + (1 if rank < n % world else 0)
    gen = torch.Generator().manual_seed(rank)
    agree = agree_any(dist, torch)
    results = {}
    for label, shape in (("big", (local, c, h, w)), ("tiny", (2, 4, 2, 2))):
        x = torch.randn(shape, generator=gen).requires_grad_(True)
        dy = torch.randn(shape, generator=gen)
        ours = sbt.SyncBatchNorm(shape[1])
        plain = torch.nn.BatchNorm2d(shape[1])

        def step_ours():
            y = ours(x)
            y.backward(dy)

        def step_plain():
            y = plain(x)
            y.backward(dy)

        results[label + "-ours"] = time_steps(step_ours, args.min_reps, args.min_time, agree)
        results[label + "-plain"] = time_steps(step_plain, args.min_reps, args.min_time,
                                               agree)
    # where the tiny step's time goes: the same module over a group of one rank (Python,
    # ctypes, views and the C calls, no collective), and the step's collectives alone
    # (what syncbn hands torch.distributed for C = 4 in the steady state: forward a SUM
    # of 11 x 14 + 5 + 3 int64, backward a SUM of 11 x 9 + 3 + 3; comm_spec.h)
    x = torch.randn(2, 4, 2, 2, generator=gen).requires_grad_(True)
    dy = torch.randn(2, 4, 2, 2, generator=gen)
    groups = [dist.new_group([r]) for r in range(world)]  # every rank makes every group
    alone = sbt.SyncBatchNorm(4, process_group=groups[rank])
    results["tiny-local"] = time_steps(lambda: alone(x).backward(dy), args.min_reps,
                                       args.min_time, agree)
    bufs = [torch.zeros(n, dtype=torch.int64) for n in (14 * 11 + 5 + 3, 9 * 11 + 3 + 3)]
    ops = [dist.ReduceOp.SUM] * 2

    def collectives():
        for b, op in zip(bufs, ops):
            dist.all_reduce(b, op=op)

    results["tiny-collectives"] = time_steps(collectives, args.min_reps, args.min_time,
                                             agree)
    floor_bn = plain_sync_bn(torch, dist)
    weight = torch.ones(4, requires_grad=True)
    bias = torch.zeros(4, requires_grad=True)
    results["tiny-floor"] = time_steps(lambda: floor_bn(x, weight, bias, 1e-5).backward(dy),
                                       args.min_reps, args.min_time, agree)
    queue.put((rank, results))
    dist.destroy_process_group()


def traffic_worker(rank, world, port, channels, queue):
    """Bytes this rank hands to torch.distributed per forward+backward of SyncBatchNorm(C)."""
    import torch
    import torch.distributed as dist
    import syncbn.torch as sbt

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=world)
    counts = {"sent": 0, "received": 0, "calls": 0}
    real_reduce, real_gather = dist.all_reduce, dist.all_gather

    def all_reduce(t, *a, **k):
        counts["sent"] += t.numel() * t.element_size()
        counts["received"] += t.numel() * t.element_size()
        counts["calls"] += 1
        return real_reduce(t, *a, **k)

    def all_gather(ts, t, *a, **k):
        counts["sent"] += t.numel() * t.element_size()
        counts["received"] += t.numel() * t.element_size() * len(ts)
        counts["calls"] += 1
        return real_gather(ts, t, *a, **k)

    m = sbt.SyncBatchNorm(channels)
    x = torch.randn(2, channels, 2, 2, requires_grad=True)
    for _ in range(2):  # the communicator, and two steps for the speculative merge's period
        m(x).sum().backward()
    dist.all_reduce, dist.all_gather = all_reduce, all_gather
    steps = 3
    for _ in range(steps):
        m(x).sum().backward()
    dist.all_reduce, dist.all_gather = real_reduce, real_gather
    queue.put((rank, {k: v // steps for k, v in counts.items()}))
    dist.destroy_process_group()


def spawn(target, world, args, timeout):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=target, args=(r, world, port) + args + (queue,))
             for r in range(world)]
    for p in procs:
        p.start()
    results = {}
    deadline = time.time() + timeout
    try:
        while len(results) < world and time.time() < deadline:
            try:
                rank, res = queue.get(timeout=5)
                results[rank] = res
            except Exception:  # noqa: BLE001 - queue.Empty: check the workers are alive
                if not any(p.is_alive() for p in procs):
                    break
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="32x64x56x56")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--min-reps", type=int, default=20)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--traffic-worlds", default="2,4,8",
                    help="world sizes whose bytes per rank are printed ('' for none)")
    ap.add_argument("--traffic-channels", type=int, default=64)
    args = ap.parse_args()
    args.traffic_worlds = [int(v) for v in args.traffic_worlds.split(",") if v]
    args.shape = [int(v) for v in args.shape.split("x")]
    try:
        import torch
        import syncbn.torch  # noqa: F401  (fail here, not in the workers)
    except Exception as e:  # noqa: BLE001 - reported as a missing row
        print("# syncbn_torch_bench: cannot import torch/syncbn with %s: %s" % (sys.executable, e))
        return 0
    results = spawn(worker, args.world, (args,), args.timeout)
    shape = "x".join(str(v) for v in args.shape)
    if len(results) < args.world:
        print("py-syncbn-torch,%s,f32,W%d,cf,fwd+bwd,,,0,0,,error,workers did not report" % (
            shape, args.world))
        return 1
    # the step of the world is the slowest rank's
    def worst(key):
        return max(results[r][key][0] for r in results), max(results[r][key][1] for r in results), \
            min(results[r][key][2] for r in results)
    n, c, h, w = args.shape
    local = n // args.world
    floor = 5 * 4 * local * c * h * w  # x read twice + y written fwd; dy, x read + dx written bwd
    print("impl,shape,dtype,threads,layout,mode,min_ms,med_ms,reps,floor_bytes,gbps,status,note")
    for impl, key, note in (
            ("py-syncbn-torch", "big-ours", "syncbn.torch.SyncBatchNorm synchronised over %d gloo "
             "ranks; %dx%dx%dx%d each" % (args.world, local, c, h, w)),
            ("py-torch-bn2d-local", "big-plain", "torch.nn.BatchNorm2d on one rank's %dx%dx%dx%d; "
             "unsynchronised" % (local, c, h, w))):
        mn, med, reps = worst(key)
        print("%s,%s,f32,W%d,cf,fwd+bwd,%.4f,%.4f,%d,%d,%.2f,ok,%s" % (
            impl, shape, args.world, mn * 1e3, med * 1e3, reps, floor, floor / med / 1e9, note))
    ours, plain = worst("big-ours")[1], worst("big-plain")[1]
    tiny_ours, tiny_plain = worst("tiny-ours")[1], worst("tiny-plain")[1]
    print("# syncbn-torch vs torch BatchNorm2d (local, unsynchronised): %.2fx (%.3f vs %.3f ms, "
          "medians of the slowest rank)" % (plain / ours, ours * 1e3, plain * 1e3))
    print("# per-call overhead on 2x4x2x2 (fwd+bwd, 2 collectives): syncbn-torch %.0f us, "
          "torch BatchNorm2d %.0f us, difference %.0f us" % (
              tiny_ours * 1e6, tiny_plain * 1e6, (tiny_ours - tiny_plain) * 1e6))
    print("# where the 2x4x2x2 step goes: %.0f us for the same module over a group of one "
          "rank (Python, ctypes, views, C; no collective), %.0f us for its two all_reduce "
          "calls alone" % (worst("tiny-local")[1] * 1e6, worst("tiny-collectives")[1] * 1e6))
    print("# the floor of any SyncBN over this group: a plain synchronised batch norm in torch "
          "ops with one all_reduce forward and one backward (no checks, no exact merge) takes "
          "%.0f us on 2x4x2x2; syncbn-torch is %.2fx of it, %.1fx of BatchNorm2d" % (
              worst("tiny-floor")[1] * 1e6, tiny_ours / worst("tiny-floor")[1],
              tiny_ours / tiny_plain))
    print("# torch %s, %d ranks x 1 thread" % (torch.__version__, args.world))
    for world in args.traffic_worlds:
        res = spawn(traffic_worker, world, (args.traffic_channels,), args.timeout)
        if len(res) < world:
            print("# bytes per rank at W=%d: workers did not report" % world)
            continue
        sent = sorted({r["sent"] for r in res.values()})
        received = sorted({r["received"] for r in res.values()})
        calls = sorted({r["calls"] for r in res.values()})
        print("# bytes per rank per fwd+bwd of SyncBatchNorm(%d), W=%d: sent %s, received %s, "
              "in %s collectives" % (args.traffic_channels, world, "/".join(map(str, sent)),
                                     "/".join(map(str, received)), "/".join(map(str, calls))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
