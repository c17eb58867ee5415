"""Per-rank bodies of the fault tests: eval without collectives, mismatched calls, bad input.

Each function returns, per scenario, the name of the exception class the rank
got (or "ok") and its message, plus whether the module's running statistics and
num_batches_tracked stayed as they were; the parent asserts on them.
"""
import torch
import torch.nn.functional as F

import syncbn
import syncbn.torch as st


def _outcome(fn):
    try:
        fn()
        return ("ok", "")
    except syncbn.SyncBNError as e:
        return (type(e).__name__, str(e))


def _snapshot(m):
    return [t.clone() for t in (m.running_mean, m.running_var, m.num_batches_tracked)]


def _unchanged(m, snap):
    return all(torch.equal(a, b) for a, b in zip(snap, _snapshot(m)))


def eval_rank(rank, world):
    """Rank 0 runs eval forward/backward alone; rank 1 returns at once."""
    if rank != 0:
        return None
    g = torch.Generator().manual_seed(3)
    m = st.SyncBatchNorm(3, dtype=torch.float64)
    with torch.no_grad():
        m.running_mean.copy_(torch.randn(3, generator=g, dtype=torch.float64))
        m.running_var.copy_(torch.rand(3, generator=g, dtype=torch.float64) + 0.5)
        m.weight.copy_(torch.randn(3, generator=g, dtype=torch.float64))
    m.eval()
    x = torch.randn(4, 3, 2, 2, generator=g, dtype=torch.float64, requires_grad=True)
    y = m(x)
    y.sum().backward()
    want = F.batch_norm(x, m.running_mean, m.running_var, m.weight, m.bias, False, 0.0, m.eps)
    no_track = st.SyncBatchNorm(3, track_running_stats=False, dtype=torch.float64).eval()
    y2 = no_track(x.detach())
    want2 = F.batch_norm(x.detach(), None, None, no_track.weight, no_track.bias, True, 0.0, 1e-5)
    return {"y": float((y - want).abs().max()), "batch_stats_y": float((y2 - want2).abs().max()),
            "nbt": int(m.num_batches_tracked)}


def _x(c, n=4, dtype=torch.float32):
    return torch.randn(n, c, 2, 2, dtype=dtype, requires_grad=True)


def mismatch_rank(rank, world):
    out = {}
    # an extra forward on rank 0 meets rank 1's backward
    m = st.SyncBatchNorm(3)
    if rank == 0:
        m(_x(3))
        out["extra_forward"] = _outcome(lambda: m(_x(3)))
    else:
        y = m(_x(3))
        out["extra_forward"] = _outcome(lambda: y.sum().backward())
    torch.distributed.barrier()
    # a different channel count on each rank
    c = 3 if rank == 0 else 4
    out["channels"] = _outcome(lambda: st.SyncBatchNorm(c)(_x(c)))
    torch.distributed.barrier()
    # bad input on rank 0 only: its peers must not wait
    for name, bad in (("one_d", lambda: torch.randn(5)),
                      ("wrong_channels", lambda: _x(4)),
                      ("mismatched_dtype", lambda: _x(3, dtype=torch.float64))):
        m = st.SyncBatchNorm(3)
        m(_x(3)).sum().backward()  # one good step first
        snap = _snapshot(m)
        x = bad() if rank == 0 else _x(3)
        out[name] = _outcome(lambda: m(x)) + (_unchanged(m, snap),)
        torch.distributed.barrier()
    # the world still works with fresh modules
    m = st.SyncBatchNorm(3)
    out["after"] = _outcome(lambda: m(_x(3)).sum().backward())
    return out


def single_sample_rank(rank, world):
    """Worlds holding one sample per channel in all: rank 0 has it, the others have none."""
    out = {}
    for name, shape, momentum in (("n_c", (1, 3), 0.1), ("n_c_h_w", (1, 3, 1, 1), None)):
        m = st.SyncBatchNorm(3, momentum=momentum)
        m(_x(3, n=2)).sum().backward()  # one good step first
        snap = _snapshot(m)
        x = torch.randn(shape if rank == 0 else (0,) + shape[1:], requires_grad=True)
        try:
            m(x)
            out[name] = ("ok", "", False, _unchanged(m, snap))
        except Exception as e:  # the class and the wording are checked by the parent
            out[name] = (type(e).__name__, str(e), isinstance(e, ValueError), _unchanged(m, snap))
        torch.distributed.barrier()
    # one sample on each of two ranks is two in all: it trains
    m = st.SyncBatchNorm(3)
    out["one_each"] = _outcome(lambda: m(torch.randn(1, 3, requires_grad=True)).sum().backward())
    return out
