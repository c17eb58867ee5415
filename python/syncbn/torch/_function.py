"""SyncBN forward and backward for a batch norm module, on the C layer (layer.h).

``sync_batch_norm(module, input)`` is the forward of ``syncbn.torch.SyncBatchNorm``
and of a patched ``torch.nn.SyncBatchNorm``. It follows torch's module: it syncs
when training in an initialised process group of more than one rank (one
allgather of the local (count, mean, M2), header-checked), and otherwise runs
plain batch norm on one local rank (eval, or no process group) with no
collective. The backward makes one allreduce of 2C values when the input needs a
gradient; grad_weight and grad_bias are this rank's share, as in torch (DDP
averages them). Every argument is checked before the C call; a rank whose input
is refused in a synchronised step announces the failure to its peers, who raise
``PeerFailedError`` instead of waiting.
"""
import ctypes

import torch
import torch.distributed as dist

from .. import _errors, _runtime
from .. import _views as V
from .._lib import LayerConfig, lib
from ._state import state_of

_LOW = (torch.float16, torch.bfloat16)


def _describe(m, x):
    return "%s(%d) on input of shape %s" % (type(m).__name__, m.num_features, tuple(x.shape))


def _check_input(m, x):
    if not isinstance(x, torch.Tensor):
        raise _errors.bad_input(_errors.ERR_BAD_VALUE, "input is a %s; expected a torch tensor"
                                % type(x).__name__)
    if x.dim() < 2:
        raise _errors.bad_input(_errors.ERR_BAD_RANK, "expected at least 2D input (got %dD input "
                                "of shape %s)" % (x.dim(), tuple(x.shape)))
    if x.dim() > 8:
        raise _errors.bad_input(_errors.ERR_BAD_RANK, "expected at most 8D input (got %dD)"
                                % x.dim())
    if x.size(1) == 0:
        raise _errors.bad_input(_errors.ERR_BAD_SHAPE, "SyncBatchNorm number of input channels "
                                "should be non-zero (input shape %s)" % (tuple(x.shape),))
    if x.device.type != "cpu":
        raise _errors.bad_input(_errors.ERR_BAD_VALUE, "input is on %s; syncbn's SyncBatchNorm "
                                "runs on CPU tensors (torch.nn.SyncBatchNorm serves %s)"
                                % (x.device, x.device.type))
    if not x.is_floating_point() or x.dtype not in V._TORCH_CODES:
        raise _errors.bad_input(_errors.ERR_BAD_DTYPE, "input has dtype %s; expected float32, "
                                "float64, float16 or bfloat16" % x.dtype)
    allowed = (x.dtype, torch.float32) if x.dtype in _LOW else (x.dtype,)
    for name in ("weight", "bias", "running_mean", "running_var"):
        t = getattr(m, name, None)
        if t is not None and t.dtype not in allowed:
            raise _errors.bad_input(_errors.ERR_BAD_DTYPE, "mismatched dtypes: input is %s but %s "
                                    "is %s (expected %s)" % (x.dtype, name, t.dtype, " or ".join(
                                        str(a) for a in allowed)))
    nbt = getattr(m, "num_batches_tracked", None)
    if nbt is not None and (nbt.dtype != torch.int64 or nbt.numel() != 1 or
                            nbt.device.type != "cpu"):
        raise _errors.bad_input(_errors.ERR_BAD_DTYPE, "num_batches_tracked is a %s %s tensor of "
                                "%d elements; expected one int64 on the CPU"
                                % (nbt.device, nbt.dtype, nbt.numel()))


def _config(m, training):
    cfg = LayerConfig()
    lib.sbn_syncbn_config_default(ctypes.byref(cfg))
    cfg.eps = float(m.eps)
    cfg.cumulative = int(m.momentum is None)
    cfg.momentum = 0.0 if m.momentum is None else float(m.momentum)
    cfg.training = int(training)
    cfg.reproducible = int(bool(getattr(m, "reproducible", False)))
    return cfg


def _workspace(xv, comm):
    n = ctypes.c_size_t()
    _errors.check(lib.sbn_syncbn_workspace_size(ctypes.byref(xv), comm.size, ctypes.byref(n)),
                  "sbn_syncbn_workspace_size")
    return _runtime.workspace(n.value)


def _sync_group(m):
    """The process group to sync over, or False (eval, no process group, world of one)."""
    if not (dist.is_available() and dist.is_initialized()):
        return False
    group = m.process_group
    if dist.get_world_size(group if group is not None else dist.group.WORLD) <= 1:
        return False
    return group if group is not None else dist.group.WORLD


class _Call:
    """What forward hands to backward besides the saved tensors."""
    __slots__ = ("module", "comm", "step", "cfg", "global_count", "save_mean", "save_invstd",
                 "running", "bias_dtype")


class _SyncBNFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, call):
        m, comm, cfg = call.module, call.comm, call.cfg
        track = m.training and m.track_running_stats
        rm = m.running_mean if (not m.training or m.track_running_stats) else None
        rv = m.running_var if (not m.training or m.track_running_stats) else None
        nbt = m.num_batches_tracked if track else None
        c = x.size(1)
        y = torch.empty_like(x)
        save_mean = torch.empty(c, dtype=torch.float64)
        save_invstd = torch.empty(c, dtype=torch.float64)
        try:
            xv, yv = V.view(x, "input"), V.view(y, "output")
            wv, bv = V.view(weight, "weight"), V.view(bias, "bias")
            # the running stats are written in training and only read in eval
            rmv = V.view(rm, "running_mean", bool(cfg.training))
            rvv = V.view(rv, "running_var", bool(cfg.training))
            smv, siv = V.view(save_mean, "save_mean"), V.view(save_invstd, "save_invstd")
            if nbt is not None:
                V.resolved(nbt, "num_batches_tracked", True)  # written through data_ptr() below
            ws, nb = _workspace(xv, comm)
        except _errors.SyncBNError as e:
            if cfg.training:
                comm.fail(e.status)
            raise
        nbt_ptr = ctypes.cast(nbt.data_ptr(), ctypes.POINTER(ctypes.c_int64)) if nbt is not None \
            else None
        count = ctypes.c_int64(0)
        if cfg.training:
            comm.set_step(call.step)
        s = lib.sbn_syncbn_forward(comm.handle, ctypes.byref(cfg), ctypes.byref(xv), V.ref(wv),
                                   V.ref(bv), V.ref(rmv), V.ref(rvv), nbt_ptr, ctypes.byref(yv),
                                   ctypes.byref(smv), ctypes.byref(siv), ctypes.byref(count), ws,
                                   nb, _runtime.pool())
        if s < 0:
            raise comm.error(s, _describe(m, x))
        call.global_count = count.value
        call.save_mean, call.save_invstd = save_mean, save_invstd
        call.running = (rm, rv)
        call.bias_dtype = bias.dtype if bias is not None else None
        ctx.call = call
        ctx.save_for_backward(x, weight)
        return y

    @staticmethod
    def backward(ctx, dy):
        call = ctx.call
        comm, cfg = call.comm, call.cfg
        x, weight = ctx.saved_tensors
        want_x, want_w, want_b = ctx.needs_input_grad[:3]
        gi = torch.empty_like(x) if want_x else None
        gw = torch.empty_like(weight) if want_w and weight is not None else None
        gb = torch.empty(x.size(1), dtype=call.bias_dtype) if want_b and call.bias_dtype else None
        rm, rv = call.running
        try:
            xv, dv = V.view(x, "input"), V.view(dy, "grad_output")
            views = [V.view(t, n, True) for t, n in ((gi, "grad_input"), (gw, "grad_weight"),
                                                     (gb, "grad_bias"))]
            ws, nb = _workspace(xv, comm)
        except _errors.SyncBNError as e:
            if cfg.training:
                comm.fail(e.status)
            raise
        if cfg.training:
            comm.set_step(call.step)
        s = lib.sbn_syncbn_backward(comm.handle, ctypes.byref(cfg), ctypes.byref(dv),
                                    ctypes.byref(xv), V.ref(V.view(weight, "weight")),
                                    V.ref(V.view(rm, "running_mean")),
                                    V.ref(V.view(rv, "running_var")),
                                    ctypes.byref(V.view(call.save_mean, "save_mean")),
                                    ctypes.byref(V.view(call.save_invstd, "save_invstd")),
                                    call.global_count, *[V.ref(v) for v in views], ws, nb,
                                    _runtime.pool())
        if s < 0:
            raise comm.error(s, "backward of " + _describe(call.module, x))
        return gi, gw, gb, None


def sync_batch_norm(m, x):
    """The forward of a SyncBN module `m` (ours or torch's) on a CPU tensor `x`."""
    st = state_of(m)
    group = _sync_group(m) if m.training else False
    comm = st.group(m.process_group) if group is not False else st.local()
    try:
        _check_input(m, x)
        bn_training = m.training or (m.running_mean is None and m.running_var is None)
        if bn_training and group is False and x.numel() // x.size(1) == 1:
            raise _errors.bad_input(_errors.ERR_BAD_VALUE, "Expected more than 1 value per "
                                    "channel when training, got input size %s"
                                    % (tuple(x.shape),))
    except _errors.SyncBNError as e:
        if group is not False:
            comm.fail(e.status)  # the peers raise PeerFailedError instead of waiting
        raise
    st.input_dim = x.dim()
    call = _Call()
    call.module, call.comm = m, comm
    call.cfg = _config(m, m.training)
    if group is not False:
        st.steps += 1
    call.step = st.steps
    return _SyncBNFunction.apply(x, m.weight, m.bias, call)
