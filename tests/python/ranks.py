"""Shared case data and the per-rank bodies of the multi-process tests.

A case is a dict: C, spatial dims, per-rank batch sizes ``counts``, input dtype,
channels_last, affine, track_running_stats, momentum (None = cumulative), steps.
``case_data(case, step)`` builds the whole batch (x, dy) deterministically, already
rounded to the case's dtype and returned in float64, so that the ranks and the
float64 oracle see the same values. ``equivalence_rank`` trains syncbn's
SyncBatchNorm (or the patched torch.nn.SyncBatchNorm) on this rank's slice and
returns numpy results for the parent to compare with whole-batch BatchNorm.
"""
import numpy as np
import torch

DTYPES = {"f64": torch.float64, "f32": torch.float32, "bf16": torch.bfloat16,
          "f16": torch.float16}


def param_dtype(case):
    d = DTYPES[case["dtype"]]
    return torch.float32 if d in (torch.float16, torch.bfloat16) else d


def case_data(case, step):
    """(x, dy) of the whole batch in float64, rounded to the case dtype."""
    g = torch.Generator().manual_seed(7919 * case["id"] + step)
    shape = (sum(case["counts"]), case["C"]) + tuple(case["spatial"])
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 2.0 + 3.0
    dy = torch.randn(shape, generator=g, dtype=torch.float64)
    d = DTYPES[case["dtype"]]
    return x.to(d).to(torch.float64), dy.to(d).to(torch.float64)


def case_params(case):
    """(weight, bias) in float64, rounded to the parameter dtype."""
    g = torch.Generator().manual_seed(104729 + case["id"])
    w = 1.0 + 0.5 * torch.randn(case["C"], generator=g, dtype=torch.float64)
    b = torch.randn(case["C"], generator=g, dtype=torch.float64)
    p = param_dtype(case)
    return w.to(p).to(torch.float64), b.to(p).to(torch.float64)


def _np(t):
    return None if t is None else t.detach().to(torch.float64).numpy().copy()


def _layout(t, case):
    if case["channels_last"] and t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    if case["channels_last"] and t.dim() == 5:
        return t.contiguous(memory_format=torch.channels_last_3d)
    return t


def _memory_format(case, dim):
    return torch.channels_last if dim == 4 else torch.channels_last_3d


def build_module(case, use_torch_class):
    import syncbn.torch as st
    cls = torch.nn.SyncBatchNorm if use_torch_class else st.SyncBatchNorm
    m = cls(case["C"], momentum=case["momentum"], affine=case["affine"],
            track_running_stats=case["track"], dtype=param_dtype(case))
    if case["affine"]:
        w, b = case_params(case)
        with torch.no_grad():
            m.weight.copy_(w)
            m.bias.copy_(b)
    return m


def equivalence_rank(rank, world, cases, use_torch_class=False):
    if use_torch_class:
        import syncbn.torch as st
        st.patch()
    out = []
    for case in cases:
        m = build_module(case, use_torch_class)
        lo = sum(case["counts"][:rank])
        hi = lo + case["counts"][rank]
        d = DTYPES[case["dtype"]]
        for step in range(case["steps"]):
            xf, dyf = case_data(case, step)
            x = _layout(xf[lo:hi].to(d), case).requires_grad_()
            dy = _layout(dyf[lo:hi].to(d), case)
            m.zero_grad(set_to_none=True)
            y = m(x)
            y.backward(dy)
        res = {"y": _np(y), "grad_input": _np(x.grad), "dtype": str(y.dtype),
               "grad_weight": _np(m.weight.grad) if case["affine"] else None,
               "grad_bias": _np(m.bias.grad) if case["affine"] else None,
               "running_mean": _np(m.running_mean), "running_var": _np(m.running_var),
               "num_batches_tracked": (int(m.num_batches_tracked)
                                       if m.num_batches_tracked is not None else None)}
        if case["channels_last"] and x.dim() >= 4 and hi > lo:
            fmt = _memory_format(case, x.dim())
            res["y_channels_last"] = y.is_contiguous(memory_format=fmt)
            res["grad_channels_last"] = x.grad.is_contiguous(memory_format=fmt)
        out.append(res)
    return out


def oracle(case):
    """Whole-batch torch BatchNorm{1,2,3}d in float64 over the same steps."""
    dim = 2 + len(case["spatial"])
    cls = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 4: torch.nn.BatchNorm2d,
           5: torch.nn.BatchNorm3d}[dim]
    bn = cls(case["C"], momentum=case["momentum"], affine=case["affine"],
             track_running_stats=case["track"], dtype=torch.float64)
    if case["affine"]:
        w, b = case_params(case)
        with torch.no_grad():
            bn.weight.copy_(w)
            bn.bias.copy_(b)
    bn.train()
    for step in range(case["steps"]):
        xf, dyf = case_data(case, step)
        x = xf.clone().requires_grad_()
        bn.zero_grad(set_to_none=True)
        y = bn(x)
        y.backward(dyf)
    return {"y": _np(y), "grad_input": _np(x.grad),
            "grad_weight": _np(bn.weight.grad) if case["affine"] else None,
            "grad_bias": _np(bn.bias.grad) if case["affine"] else None,
            "running_mean": _np(bn.running_mean), "running_var": _np(bn.running_var),
            "num_batches_tracked": (int(bn.num_batches_tracked)
                                    if bn.num_batches_tracked is not None else None)}


def concat(results, key):
    return np.concatenate([r[key] for r in results], axis=0)
