"""Per-rank body of the traffic test: the bytes a SyncBN step hands to torch.distributed.

``traffic_rank`` wraps torch.distributed's collectives in this process (every
call goes through the module attribute, so syncbn's callbacks see the wrappers),
runs warm-up and measured forward+backward steps of syncbn's SyncBatchNorm and
returns, per step, the bytes this rank handed to each collective and received
from it (all_reduce: the tensor each way; all_gather: one tensor out, W back),
the calls by name, and the C handle's own count (sbn_comm_traffic).
"""
import torch
import torch.distributed as dist

import syncbn.torch as st
from syncbn.torch._state import state_of


def _wrap(counts):
    real_reduce, real_gather = dist.all_reduce, dist.all_gather

    def all_reduce(tensor, *args, **kwargs):
        n = tensor.numel() * tensor.element_size()
        counts["sent"] += n
        counts["received"] += n
        counts["calls"].append("all_reduce")
        return real_reduce(tensor, *args, **kwargs)

    def all_gather(tensor_list, tensor, *args, **kwargs):
        n = tensor.numel() * tensor.element_size()
        counts["sent"] += n
        counts["received"] += n * len(tensor_list)
        counts["calls"].append("all_gather")
        return real_gather(tensor_list, tensor, *args, **kwargs)

    dist.all_reduce, dist.all_gather = all_reduce, all_gather
    return real_reduce, real_gather


def traffic_rank(rank, world, channels, steps):
    counts = {"sent": 0, "received": 0, "calls": []}
    m = st.SyncBatchNorm(channels)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(3, channels, 2, 2, generator=g, requires_grad=True)
    for _ in range(2):  # warm-up: the communicator exists, and two steps show their period
        m(x).sum().backward()
    comm = state_of(m)._group_comm
    c_sent0, c_recv0 = comm.traffic()
    real = _wrap(counts)
    try:
        for _ in range(steps):
            m(x).sum().backward()
    finally:
        dist.all_reduce, dist.all_gather = real
    c_sent, c_recv = comm.traffic()
    return {"sent": counts["sent"] // steps, "received": counts["received"] // steps,
            "calls": counts["calls"][:len(counts["calls"]) // steps],
            "c_sent": (c_sent - c_sent0) // steps, "c_received": (c_recv - c_recv0) // steps}
