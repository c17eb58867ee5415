"""Train torchvision's resnet18 with syncbn's SyncBatchNorm under DDP on 2 CPU processes.

The model's BatchNorm2d layers are swapped for ``syncbn.torch.SyncBatchNorm`` with
``convert_sync_batchnorm``; DistributedDataParallel (gloo) trains it on synthetic
32x32 images whose global batch is split unevenly over the ranks (8 and 4 by
default), in float64 by default (``--dtype float32`` also works; training
amplifies rounding, so float32 runs drift apart by ~1e-2 after 8 steps whatever
the batch norm). Each rank's loss is its share of the whole-batch mean (sum / N * W, as
DDP averages gradients over W ranks), so the run is mathematically the same as
one process training the plain model on the whole batch. The script prints the
loss per step, then trains that single-process reference on rank 0 and prints
the largest difference of the weights and of the running statistics.

Run: ``python3 examples/ddp_resnet.py`` (spawns 2 ranks itself) or
``torchrun --nproc_per_node 2 examples/ddp_resnet.py``; ``make demo-python``.
"""
import argparse
import copy
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
import torchvision

try:
    import syncbn.torch as sbn
except ImportError:  # running from a source checkout without PYTHONPATH
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import syncbn.torch as sbn


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batches", default="8,4", help="per-rank batch sizes (default 8,4)")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--size", type=int, default=32, help="image side (default 32)")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                   help="model and data dtype (default float64: training amplifies rounding "
                        "differences, and in float32 a 1e-7 change of the initial weights alone "
                        "moves the weights by ~1e-2 after 8 steps)")
    return p.parse_args(argv)


def make_data(args, total, step):
    """A learnable synthetic task: the class is fixed by the images' channel means."""
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(total, 3, args.size, args.size, generator=g, dtype=torch.float64)
    x += torch.randn(total, 3, 1, 1, generator=g, dtype=torch.float64)
    w = torch.randn(3, 10, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    y = (x.mean((2, 3)) @ w).argmax(1)
    return x.to(getattr(torch, args.dtype)), y


def make_model(args):
    torch.manual_seed(0)
    return torchvision.models.resnet18(num_classes=10).to(getattr(torch, args.dtype))


def train_reference(args, init_state, counts):
    """The plain model (BatchNorm2d) trained in one process on the whole batch."""
    model = make_model(args)
    model.load_state_dict(init_state)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    total = sum(counts)
    for step in range(args.steps):
        x, y = make_data(args, total, step)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return model


def largest_differences(ddp_model, ref_model):
    got, want = ddp_model.state_dict(), ref_model.state_dict()
    params = dict(ref_model.named_parameters())
    weights = stats = 0.0
    for name, value in want.items():
        if name.endswith("num_batches_tracked"):
            assert int(got[name]) == int(value), name
            continue
        d = float((got[name].double() - value.double()).abs().max())
        if name in params:
            weights = max(weights, d)
        else:
            stats = max(stats, d)
    return weights, stats


def worker(rank, world, args):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    counts = [int(c) for c in args.batches.split(",")]
    if len(counts) != world:
        raise SystemExit("--batches needs %d sizes, one per rank" % world)
    total, lo = sum(counts), sum(counts[:rank])
    model = make_model(args)
    init_state = copy.deepcopy(model.state_dict())
    model = sbn.convert_sync_batchnorm(model)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    for step in range(args.steps):
        x, y = make_data(args, total, step)
        x, y = x[lo:lo + counts[rank]], y[lo:lo + counts[rank]]
        opt.zero_grad()
        # this rank's share of the whole-batch mean; DDP divides the summed gradients by W
        loss = F.cross_entropy(ddp(x), y, reduction="sum") * world / total
        loss.backward()
        opt.step()
        whole = loss.detach() / world
        dist.all_reduce(whole)
        if rank == 0:
            print("step %d  loss %.6f  (rank batches %s)" % (step, float(whole), counts),
                  flush=True)
    if rank == 0:
        ref = train_reference(args, init_state, counts)
        trained = sbn.revert_sync_batchnorm(copy.deepcopy(model))
        w, s = largest_differences(trained, ref)
        print("largest difference from one process on the whole batch after %d steps: "
              "weights %.3g, running stats %.3g" % (args.steps, w, s), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    args = parse_args(argv)
    if "RANK" in os.environ:  # torchrun
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return
    world = len(args.batches.split(","))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(_free_port()))
    mp.spawn(worker, args=(world, args), nprocs=world, join=True)


if __name__ == "__main__":
    main()
