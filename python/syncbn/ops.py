"""The native SyncBN ops of include/syncbn/ops.h over numpy arrays and torch CPU tensors.

Each function takes arrays or tensors of any strides (zero-copy), allocates its
outputs of the same kind as its first input (or writes into ``out=``), runs the C
op on the process-wide pool and returns the outputs. Per-channel statistics of
f16/bf16 inputs are f32, as in PyTorch. Running statistics passed in are updated
in place. Failures raise ``SyncBNError`` with the library's sentence; the
formulas, edge cases (empty batches, one sample) and statuses are those of
ops.h. PyTorch-named forms of the six SyncBN ops are in ``torch_ops``.
"""
import ctypes

import numpy as np

from . import _errors, _runtime
from . import _views as V
from ._lib import lib

__all__ = ["stats", "stats_moments", "gather_moments", "gather_stats_with_counts",
           "gather_stats_from_sums", "reduce", "elemt", "backward_reduce", "backward_elemt",
           "batch_norm", "batch_norm_backward", "fold_conv"]


def _channels(x, name="x"):
    if x.ndim < 2:
        raise _errors.bad_input(_errors.ERR_BAD_RANK, "%s has %d dims (shape %s); expected (N, C, "
                                "...) with 2 to 8 dims" % (name, x.ndim, tuple(x.shape)))
    return int(x.shape[1])


def _run(fn, *args):
    """Runs an op; raises for a failure, returns the (success) status."""
    return _errors.check(fn(*args), fn.__name__)


def _ws(size_fn, xv):
    return _runtime.workspace_for(size_fn, ctypes.byref(xv))


def stats(x, eps=1e-5):
    """(mean, invstd) per channel of x; invstd = 1/sqrt(biased var + eps)."""
    xv = V.view(x, "x")
    c = _channels(x)
    code = V.stats_code(xv.dtype)
    mean, invstd = V.empty(x, (c,), code), V.empty(x, (c,), code)
    mv, iv = V.view(mean, "mean"), V.view(invstd, "invstd")
    ws, nb = _ws(lib.sbn_stats_workspace_size, xv)
    _run(lib.sbn_stats, ctypes.byref(xv), float(eps), ctypes.byref(mv), ctypes.byref(iv), ws, nb,
         _runtime.pool())
    return mean, invstd


def stats_moments(x):
    """Float64 [C, 3] of (count, mean, M2) per channel, for exchange between ranks."""
    xv = V.view(x, "x")
    c = _channels(x)
    out = V.empty(x, (c, 3), V.F64)
    ptr = out.data_ptr() if V.is_torch(out) else out.ctypes.data
    ws, nb = _ws(lib.sbn_stats_moments_workspace_size, xv)
    _run(lib.sbn_stats_moments, ctypes.byref(xv), ptr, ws, nb, _runtime.pool())
    return out


def _moments_block(parts):
    """A C-contiguous float64 [W, C, 3] copy-if-needed of parts, and its pointer."""
    if V.is_torch(parts):
        V.view(parts, "parts")  # device and layout checks
        # .to() and .contiguous() return parts itself when nothing changes, lazy bits included
        p = V.resolved(parts.detach(), "parts").to(dtype=V._torch.float64).contiguous()
        return p, p.data_ptr()
    p = np.ascontiguousarray(parts, dtype=np.float64)
    return p, p.ctypes.data


def gather_moments(parts, momentum=0.1, eps=1e-5, running_mean=None, running_var=None):
    """Merges [W, C, 3] per-rank moments in rank order: (mean, invstd, total [C, 3]), float64."""
    if parts.ndim != 3 or parts.shape[2] != 3:
        raise _errors.bad_input(_errors.ERR_BAD_SHAPE, "parts has shape %s; expected [W, C, 3] "
                                "(count, mean, M2) from stats_moments" % (tuple(parts.shape),))
    w, c = int(parts.shape[0]), int(parts.shape[1])
    block, ptr = _moments_block(parts)
    mean, invstd, total = (V.empty(parts, (c,), V.F64), V.empty(parts, (c,), V.F64),
                           V.empty(parts, (c, 3), V.F64))
    rm, rv = V.view(running_mean, "running_mean", True), V.view(running_var, "running_var", True)
    mv, iv = V.view(mean, "mean"), V.view(invstd, "invstd")
    tptr = total.data_ptr() if V.is_torch(total) else total.ctypes.data
    _run(lib.sbn_gather_moments, ptr, w, c, float(momentum), float(eps), V.ref(rm), V.ref(rv),
         tptr, ctypes.byref(mv), ctypes.byref(iv))
    del block
    return mean, invstd, total


def _gather_outputs(first, first_view, name, running_mean, running_var):
    """The [C] mean/invstd outputs of a [W, C] gather (first's float dtype, else f32) and the
    views of them and of the optional running stats: (mean, invstd, mv, iv, rm, rv)."""
    if first.ndim != 2:
        raise _errors.bad_input(_errors.ERR_BAD_RANK, "%s has shape %s; expected [W, C]"
                                % (name, tuple(first.shape)))
    c = int(first.shape[1])
    code = first_view.dtype if first_view.dtype in V.FLOAT_CODES else V.F32
    mean, invstd = V.empty(first, (c,), code), V.empty(first, (c,), code)
    mv, iv = V.view(mean, "mean"), V.view(invstd, "invstd")
    rm, rv = V.view(running_mean, "running_mean", True), V.view(running_var, "running_var", True)
    return mean, invstd, mv, iv, rm, rv


def gather_stats_with_counts(mean_all, invstd_all, counts, momentum=0.1, eps=1e-5,
                             running_mean=None, running_var=None):
    """Merges [W, C] per-rank mean/invstd with counts [W]: the global (mean, invstd)."""
    ma, ia, cn = V.view(mean_all, "mean_all"), V.view(invstd_all, "invstd_all"), V.view(counts,
                                                                                           "counts")
    mean, invstd, mv, iv, rm, rv = _gather_outputs(mean_all, ma, "mean_all", running_mean,
                                                   running_var)
    ws, nb = _ws(lib.sbn_gather_stats_with_counts_workspace_size, ma)
    _run(lib.sbn_gather_stats_with_counts, ctypes.byref(ma), ctypes.byref(ia), ctypes.byref(cn),
         float(momentum), float(eps), V.ref(rm), V.ref(rv), ctypes.byref(mv), ctypes.byref(iv), ws,
         nb, _runtime.pool())
    return mean, invstd


def gather_stats_from_sums(total_sum, total_square_sum, sample_count, momentum=0.1, eps=1e-5,
                           running_mean=None, running_var=None):
    """Merges [W, C] per-rank sums and sums of squares with counts [W]: (mean, invstd)."""
    sv, qv = V.view(total_sum, "total_sum"), V.view(total_square_sum, "total_square_sum")
    cv = V.view(sample_count, "sample_count")
    mean, invstd, mv, iv, rm, rv = _gather_outputs(total_sum, sv, "total_sum", running_mean,
                                                   running_var)
    _run(lib.sbn_gather_stats_from_sums, ctypes.byref(sv), ctypes.byref(qv), ctypes.byref(cv),
         float(momentum), float(eps), V.ref(rm), V.ref(rv), ctypes.byref(mv), ctypes.byref(iv))
    return mean, invstd


def reduce(x):
    """(sum, square_sum) per channel of x."""
    xv = V.view(x, "x")
    c = _channels(x)
    code = V.stats_code(xv.dtype)
    s, q = V.empty(x, (c,), code), V.empty(x, (c,), code)
    sv, qv = V.view(s, "sum"), V.view(q, "square_sum")
    ws, nb = _ws(lib.sbn_reduce_workspace_size, xv)
    _run(lib.sbn_reduce, ctypes.byref(xv), ctypes.byref(sv), ctypes.byref(qv), ws, nb,
         _runtime.pool())
    return s, q


def elemt(x, mean, invstd, weight=None, bias=None, out=None):
    """y = (x - mean) * invstd * weight + bias, in x's dtype and layout (or into out)."""
    xv = V.view(x, "x")
    _channels(x)
    y = out if out is not None else V.empty(x, None, xv.dtype, channels_last_of=x)
    yv = V.view(y, "out", True)
    ws, nb = _ws(lib.sbn_elemt_workspace_size, xv)
    _run(lib.sbn_elemt, ctypes.byref(xv), V.ref(V.view(mean, "mean")),
         V.ref(V.view(invstd, "invstd")), V.ref(V.view(weight, "weight")),
         V.ref(V.view(bias, "bias")), ctypes.byref(yv), ws, nb, _runtime.pool())
    return y


def backward_reduce(dy, x, mean, invstd, sum_dy=True, sum_dy_xmu=True, grad_weight=True,
                    grad_bias=True, weight_dtype=None):
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias) per channel; a False flag gives None.

    Outputs take mean's dtype (grad_weight/grad_bias the sbn dtype code weight_dtype if given).
    """
    xv, dv = V.view(x, "x"), V.view(dy, "dy")
    c = _channels(x)
    mv, iv = V.view(mean, "mean"), V.view(invstd, "invstd")
    code = mv.dtype if mv is not None else V.stats_code(xv.dtype)
    pcode = code if weight_dtype is None else weight_dtype
    outs = [V.empty(x, (c,), k) if want else None
            for want, k in ((sum_dy, code), (sum_dy_xmu, code), (grad_weight, pcode),
                            (grad_bias, pcode))]
    views = [V.view(o, "out", True) for o in outs]
    ws, nb = _ws(lib.sbn_backward_reduce_workspace_size, xv)
    _run(lib.sbn_backward_reduce, ctypes.byref(dv), ctypes.byref(xv), V.ref(mv), V.ref(iv),
         *[V.ref(v) for v in views], ws, nb, _runtime.pool())
    return tuple(outs)


def backward_elemt(dy, x, mean, invstd, weight, sum_dy, sum_dy_xmu, count, out=None):
    """grad_input of SyncBN given the all-reduced sums and the global count (an int)."""
    xv, dv = V.view(x, "x"), V.view(dy, "dy")
    _channels(x)
    g = out if out is not None else V.empty(x, None, xv.dtype, channels_last_of=x)
    gv = V.view(g, "out", True)
    ws, nb = _ws(lib.sbn_backward_elemt_workspace_size, xv)
    _run(lib.sbn_backward_elemt, ctypes.byref(dv), ctypes.byref(xv),
         V.ref(V.view(mean, "mean")), V.ref(V.view(invstd, "invstd")),
         V.ref(V.view(weight, "weight")), V.ref(V.view(sum_dy, "sum_dy")),
         V.ref(V.view(sum_dy_xmu, "sum_dy_xmu")), int(count), ctypes.byref(gv), ws, nb,
         _runtime.pool())
    return g


def batch_norm(x, weight=None, bias=None, running_mean=None, running_var=None, training=True,
               momentum=0.1, eps=1e-5):
    """Local batch norm (F.batch_norm semantics): (y, save_mean, save_invstd).

    save_mean and save_invstd are None in eval (training=False).
    """
    xv = V.view(x, "x")
    c = _channels(x)
    y = V.empty(x, None, xv.dtype, channels_last_of=x)
    yv = V.view(y, "y", True)
    code = V.stats_code(xv.dtype)
    sm = V.empty(x, (c,), code) if training else None
    si = V.empty(x, (c,), code) if training else None
    ws, nb = _ws(lib.sbn_batch_norm_workspace_size, xv)
    _run(lib.sbn_batch_norm, ctypes.byref(xv), V.ref(V.view(weight, "weight")),
         V.ref(V.view(bias, "bias")), int(bool(training)), float(momentum), float(eps),
         V.ref(V.view(running_mean, "running_mean", bool(training))),
         V.ref(V.view(running_var, "running_var", bool(training))), ctypes.byref(yv),
         V.ref(V.view(sm, "save_mean")), V.ref(V.view(si, "save_invstd")), ws, nb,
         _runtime.pool())
    return y, sm, si


def batch_norm_backward(dy, x, weight=None, running_mean=None, running_var=None, save_mean=None,
                        save_invstd=None, training=True, eps=1e-5,
                        output_mask=(True, True, True)):
    """(grad_input, grad_weight, grad_bias) of local batch norm; a False mask entry gives None."""
    xv, dv = V.view(x, "x"), V.view(dy, "dy")
    c = _channels(x)
    pcode = V.dtype_code(weight) if weight is not None else V.stats_code(xv.dtype)
    gi = V.empty(x, None, xv.dtype, channels_last_of=x) if output_mask[0] else None
    gw = V.empty(x, (c,), pcode) if output_mask[1] else None
    gb = V.empty(x, (c,), pcode) if output_mask[2] else None
    ws, nb = _ws(lib.sbn_batch_norm_backward_workspace_size, xv)
    _run(lib.sbn_batch_norm_backward, ctypes.byref(dv), ctypes.byref(xv),
         V.ref(V.view(weight, "weight")), V.ref(V.view(running_mean, "running_mean")),
         V.ref(V.view(running_var, "running_var")), V.ref(V.view(save_mean, "save_mean")),
         V.ref(V.view(save_invstd, "save_invstd")), int(bool(training)), float(eps),
         V.ref(V.view(gi, "grad_input", True)), V.ref(V.view(gw, "grad_weight", True)),
         V.ref(V.view(gb, "grad_bias", True)), ws, nb, _runtime.pool())
    return gi, gw, gb


def fold_conv(conv_weight, conv_bias, bn_weight, bn_bias, running_mean, running_var, eps=1e-5,
              out_weight=None, out_bias=None):
    """Folds an eval batch norm into the conv before it: (weight', bias').

    out_weight/out_bias may be conv_weight/conv_bias themselves (in place).
    """
    fn = getattr(lib, "sbn_fold_conv", None)
    if fn is None:
        raise _errors.SyncBNError(_errors.ERR_BAD_VALUE, "this libsyncbn (%s) has no sbn_fold_conv;"
                                  " rebuild it from a newer checkout" % lib.sbn_path)
    wv = V.view(conv_weight, "conv_weight")
    o = int(conv_weight.shape[0]) if conv_weight.ndim else 0
    fw = out_weight if out_weight is not None else V.empty(conv_weight, None, wv.dtype,
                                                           channels_last_of=conv_weight)
    bcode = V.dtype_code(conv_bias) if conv_bias is not None else wv.dtype
    fb = out_bias if out_bias is not None else V.empty(conv_weight, (o,), bcode)
    _run(fn, ctypes.byref(wv), V.ref(V.view(conv_bias, "conv_bias")),
         V.ref(V.view(bn_weight, "bn_weight")), V.ref(V.view(bn_bias, "bn_bias")),
         V.ref(V.view(running_mean, "running_mean")), V.ref(V.view(running_var, "running_var")),
         float(eps), ctypes.byref(V.view(fw, "folded_weight", True)),
         ctypes.byref(V.view(fb, "folded_bias", True)))
    return fw, fb
