"""PyTorch's SyncBN op family under PyTorch's names and argument names, on CPU.

``torch.batch_norm_stats``, ``batch_norm_gather_stats``,
``batch_norm_gather_stats_with_counts``, ``batch_norm_elemt``,
``batch_norm_backward_reduce`` and ``batch_norm_backward_elemt`` have CUDA kernels
only; the functions here take the same arguments (torch >= 1.9 schemas: counts as
a tensor, ``sum_dy``/``sum_dy_xmu`` plus the per-rank ``count`` tensor) and return
the same values, computed by libsyncbn, so code written against the CUDA ops runs
on CPU tensors (and numpy arrays) unchanged: ``torch.batch_norm_stats(x, eps)``
becomes ``syncbn.batch_norm_stats(x, eps)``.
"""
from . import _errors, ops
from . import _views as V

__all__ = ["batch_norm_stats", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
           "batch_norm_elemt", "batch_norm_backward_reduce", "batch_norm_backward_elemt"]


def batch_norm_stats(input, eps):
    """(mean, invstd) of the local batch, per channel."""
    return ops.stats(input, eps)


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum,
                                        eps, counts):
    """Global (mean, invstd) from the gathered [W, C] mean/invstd and the [W] counts.

    running_mean/running_var (may be None) are updated in place, as torch does.
    """
    V.view(input, "input")  # device check, as torch's dispatch would
    return ops.gather_stats_with_counts(mean, invstd, counts, momentum, eps, running_mean,
                                        running_var)


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps,
                            count):
    """The legacy form: every rank holds `count` samples."""
    if V.is_torch(mean):
        counts = V._torch.full((mean.shape[0],), float(count), dtype=mean.dtype)
    else:
        import numpy as np
        counts = np.full((mean.shape[0],), float(count), dtype=mean.dtype)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                               momentum, eps, counts)


def batch_norm_elemt(input, weight, bias, mean, invstd, eps, out=None):
    """(input - mean) * invstd * weight + bias; eps is unused, as in torch."""
    del eps
    return ops.elemt(input, mean, invstd, weight, bias, out=out)


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias); outputs not asked for are None."""
    wcode = V.dtype_code(weight) if weight is not None else None
    return ops.backward_reduce(grad_out, input, mean, invstd, sum_dy=input_g,
                               sum_dy_xmu=input_g, grad_weight=weight_g and weight is not None,
                               grad_bias=bias_g and weight is not None, weight_dtype=wcode)


def _total_count(count):
    if isinstance(count, int):
        return count
    if V.is_torch(count):
        V.view(count, "count")
        total = float(count.double().sum())
    else:
        total = float(count.sum())
    if total != int(total) or total < 0:
        raise _errors.bad_input(_errors.ERR_BAD_VALUE, "count sums to %r; expected a whole "
                                "number of samples >= 0" % total)
    return int(total)


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    """grad_input from the all-reduced sums; count is the [W] per-rank counts (summed here)."""
    return ops.backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu,
                              _total_count(count))
