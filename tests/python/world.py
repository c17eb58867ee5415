"""A small gloo world for tests: spawns ranks running one function, with a hard timeout.

``run_world(fn, world, *args)`` starts `world` processes (spawn) on a free port of
127.0.0.1, each initialising a gloo process group (with ``gloo_timeout`` seconds
as torch's collective timeout) and calling ``fn(rank, world, *args)``; it
returns the list of the ranks' return values (picklable: numpy arrays, not
tensors). A rank that raises makes run_world raise with that rank's traceback; a
world that does not finish within ``timeout`` seconds is killed and reported as a
hang, so a deadlock fails the test instead of stopping the run.
"""
import os
import queue
import socket
import time
import traceback
from datetime import timedelta

import torch.multiprocessing as mp


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(fn, rank, world, port, results, gloo_timeout, args):
    import torch
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=timedelta(seconds=gloo_timeout))
        out = fn(rank, world, *args)
        results.put((rank, True, out))
    except BaseException:
        results.put((rank, False, traceback.format_exc()))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_world(fn, world, *args, timeout=120, gloo_timeout=30):
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_entry, args=(fn, r, world, port, results, gloo_timeout, args),
                         daemon=True) for r in range(world)]
    for p in procs:
        p.start()
    got, deadline = {}, time.monotonic() + timeout
    try:
        while len(got) < world:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                rank, ok, out = results.get(timeout=min(left, 1.0))
            except queue.Empty:
                if all(not p.is_alive() for p in procs) and results.empty():
                    break
                continue
            got[rank] = (ok, out)
    finally:
        for p in procs:
            p.join(timeout=max(0.0, min(10.0, deadline - time.monotonic())))
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    missing = [r for r in range(world) if r not in got]
    if missing:
        raise AssertionError("ranks %s did not finish within %s s (a hang) or died (exit codes %s)"
                             % (missing, timeout, [p.exitcode for p in procs]))
    failed = {r: out for r, (ok, out) in got.items() if not ok}
    if failed:
        raise AssertionError("".join("--- rank %d raised:\n%s" % kv for kv in sorted(failed.items())))
    return [got[r][1] for r in range(world)]
