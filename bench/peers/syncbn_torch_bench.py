"""The Python row of the benchmark: syncbn.torch.SyncBatchNorm under torch.distributed.

Two gloo processes on 127.0.0.1 each hold half of an N x C x H x W fp32 batch
(default 32x64x56x56, so 16x64x56x56 per rank) and time forward + backward of
``syncbn.torch.SyncBatchNorm`` (synchronised: one allgather forward, one allreduce
backward) against ``torch.nn.BatchNorm2d`` forward + backward on the same local
half, unsynchronised, which is what CPU users fall back to today. Both run in the
same processes at the same time, one compute thread per process (2 processes on
2 cores). A tiny 2x4x2x2 batch gives the per-call overhead of the Python layer and
the two collectives in microseconds. Prints run_bench.py's CSV rows (impl
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


def time_steps(step, min_reps, min_time, barrier):
    """Median and min of `step` over at least min_reps calls and min_time seconds."""
    for _ in range(3):  # warm-up (first calls allocate)
        step()
    times = []
    start = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_time:
        barrier()
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
        if len(times) >= 10 * min_reps:
            break
    return min(times), statistics.median(times), len(times)


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

        results[label + "-ours"] = time_steps(step_ours, args.min_reps, args.min_time, dist.barrier)
        results[label + "-plain"] = time_steps(step_plain, args.min_reps, args.min_time,
                                               dist.barrier)
    queue.put((rank, results))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="32x64x56x56")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--min-reps", type=int, default=20)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    args.shape = [int(v) for v in args.shape.split("x")]
    try:
        import torch
        import torch.multiprocessing as mp
        import syncbn.torch  # noqa: F401  (fail here, not in the workers)
    except Exception as e:  # noqa: BLE001 - reported as a missing row
        print("# syncbn_torch_bench: cannot import torch/syncbn with %s: %s" % (sys.executable, e))
        return 0
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, args.world, port, args, queue))
             for r in range(args.world)]
    for p in procs:
        p.start()
    results = {}
    deadline = time.time() + args.timeout
    try:
        while len(results) < args.world and time.time() < deadline:
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
    print("# torch %s, %d ranks x 1 thread" % (torch.__version__, args.world))
    return 0


if __name__ == "__main__":
    sys.exit(main())
