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
from .._lib import BackwardIO, ForwardIO, LayerConfig, lib
from ._state import state_of

_LOW = (torch.float16, torch.bfloat16)


def _describe(m, x):
    return "%s(%d) on input of shape %s" % (type(m).__name__, m.num_features, tuple(x.shape))


def _check_input(m, x):
    if not isinstance(x, torch.Tensor):
        raise _errors.bad_input(_errors.ERR_BAD_VALUE, "input is a %s; expected a torch tensor"
                                % type(x).__name__)
    if x.dim() < 2:  # torch's words (scripts match them)
        raise _errors.bad_input(_errors.ERR_BAD_RANK, "expected at least 2D input (got %dD input)"
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
    """The module's sbn_syncbn_config, one per setting, kept in its state (the C calls only
    read it)."""
    key = (m.eps, m.momentum, bool(training), bool(getattr(m, "reproducible", False)))
    configs = state_of(m).configs
    cfg = configs.get(key)
    if cfg is None:
        if len(configs) > 16:  # a module whose eps or momentum keeps changing
            configs.clear()
        cfg = configs[key] = _new_config(m, training)
    return cfg


def _new_config(m, training):
    cfg = LayerConfig()
    _errors.check(lib.sbn_syncbn_config_init(ctypes.byref(cfg), ctypes.sizeof(cfg)),
                  "sbn_syncbn_config_init")
    cfg.eps = float(m.eps)
    cfg.cumulative = int(m.momentum is None)
    cfg.momentum = 0.0 if m.momentum is None else float(m.momentum)
    cfg.training = int(training)
    cfg.reproducible = int(bool(getattr(m, "reproducible", False)))
    return cfg


def _ptr(v):
    """A pointer member of an io struct for an optional view."""
    return ctypes.pointer(v) if v is not None else None


_WORKSPACE_BYTES = {}  # (shape, strides, dtype) -> sbn_syncbn_workspace_size's answer


def _workspace(x, xv, comm):
    key = (x.shape, x.stride(), x.dtype)
    nbytes = _WORKSPACE_BYTES.get(key)
    if nbytes is None:
        n = ctypes.c_size_t()
        _errors.check(lib.sbn_syncbn_workspace_size(ctypes.byref(xv), ctypes.byref(n)),
                      "sbn_syncbn_workspace_size")
        if len(_WORKSPACE_BYTES) > 256:
            _WORKSPACE_BYTES.clear()
        nbytes = _WORKSPACE_BYTES[key] = n.value
    return _runtime.workspace(nbytes)


def _sync_group(m):
    """The process group to sync over, or False (eval, no process group, world of one)."""
    if not (dist.is_available() and dist.is_initialized()):
        return False
    group = m.process_group
    if dist.get_world_size(group if group is not None else dist.group.WORLD) <= 1:
        return False
    return group if group is not None else dist.group.WORLD


class _Call:
    """What forward hands to backward besides the saved tensors: among them the views forward
    made of the tensors backward reads again (x, weight, the running stats, save_mean and
    save_invstd: the same memory, which the saved tensors keep alive and autograd's version
    check keeps unchanged)."""
    __slots__ = ("module", "comm", "step", "cfg", "global_count", "save_mean", "save_invstd",
                 "bias_dtype", "views")


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
            ws, nb = _workspace(x, xv, comm)
        except _errors.SyncBNError as e:
            if cfg.training:
                comm.fail(e.status)
            raise
        nbt_ptr = ctypes.cast(nbt.data_ptr(), ctypes.POINTER(ctypes.c_int64)) if nbt is not None \
            else None
        count = ctypes.c_int64(0)
        # A world holding one sample per channel in all is known only after the exchange,
        # where the C call has already updated running_mean and num_batches_tracked (it
        # returns SBN_SINGLE_SAMPLE on every rank). Only a rank with at most one sample can
        # be part of such a world, so only it keeps a copy of the state to put back.
        state = [t for t in (rm, rv, nbt) if t is not None] if cfg.training else []
        saved = [t.clone() for t in state] if x.numel() <= c else None
        if cfg.training:
            comm.set_step(call.step)
        io = ForwardIO(_ptr(xv), _ptr(wv), _ptr(bv), _ptr(rmv), _ptr(rvv), nbt_ptr, _ptr(yv),
                       _ptr(smv), _ptr(siv), ctypes.pointer(count))
        s = lib.sbn_syncbn_forward(comm.handle, ctypes.byref(cfg), ctypes.byref(io), ws, nb,
                                   _runtime.pool())
        if s < 0:
            raise comm.error(s, _describe(m, x))
        if s == _errors.SINGLE_SAMPLE and cfg.training:
            for t, before in zip(state, saved or ()):
                t.copy_(before)
            raise _errors.bad_input(_errors.ERR_BAD_VALUE, "Expected more than 1 value per channel "
                                    "when training, got input size 1 (summed over the %d ranks "
                                    "of the process group; this rank's input has shape %s)"
                                    % (comm.size, tuple(x.shape)))
        call.global_count = count.value
        call.save_mean, call.save_invstd = save_mean, save_invstd
        call.views = (xv, wv, rmv, rvv, smv, siv)
        call.bias_dtype = bias.dtype if bias is not None else None
        ctx.call = call
        # Eval with running statistics reads them again in backward: saved, so that autograd
        # refuses a backward after they were changed in place (as for torch's batch norm).
        # Training's backward does not read them (the C layer takes them as optional).
        eval_running = not cfg.training and rm is not None and rv is not None
        ctx.save_for_backward(x, weight, rm if eval_running else None,
                              rv if eval_running else None)
        return y

    @staticmethod
    def backward(ctx, dy):
        call = ctx.call
        x, weight, rm, rv = ctx.saved_tensors
        if not torch.is_grad_enabled():
            return _native_backward(ctx, dy)
        # create_graph=True: autograd records this backward, so that the caller can
        # differentiate the gradients (gradient penalties, gradgradcheck). The C call is not
        # recorded: its gradients would look like constants and the second-order terms
        # would silently be zero.
        if rm is not None and rv is not None:  # eval with running statistics
            return _running_stats_backward(ctx, dy)
        with torch.no_grad():
            grads = _native_backward(ctx, dy)
        return _no_second_order(grads, (dy, x, weight), call.module, x)


class _SecondOrderRefused(torch.autograd.Function):
    """The identity on gradients that have no second-order formula; its backward raises.

    Its inputs are the tensors the gradients depend on (dy, x, weight) and then the
    gradients, so that autograd finds this node on every path from a gradient back to
    them, ``torch.autograd.grad(grad, x)`` included. torch's once_differentiable hangs its
    error node on detached copies instead, which that call does not reach (a silent zero),
    and only when dy requires grad (with a constant dy the batch-statistics gradients
    still depend on x and weight)."""

    @staticmethod
    def forward(ctx, message, n_deps, *tensors):
        ctx.message = message
        return tensors[n_deps:]

    @staticmethod
    def backward(ctx, *unused):
        raise NotImplementedError(ctx.message)


def _no_second_order(grads, deps, m, x):
    """grads (a backward's return value) with _SecondOrderRefused as their grad_fn."""
    deps = [t for t in deps if t is not None]
    message = ("double backward of %s in training mode (or eval without running statistics) "
               "is not implemented: its gradients use the batch statistics and are computed "
               "by libsyncbn outside autograd, so they cannot be differentiated again "
               "(create_graph=True: gradient penalties, gradgradcheck). Eval mode with running "
               "statistics supports double backward." % _describe(m, x))
    present = [i for i, g in enumerate(grads) if g is not None]
    wrapped = _SecondOrderRefused.apply(message, len(deps), *deps, *[grads[i] for i in present])
    out = list(grads)
    for i, g in zip(present, wrapped):
        out[i] = g
    return tuple(out)


def _running_stats_backward(ctx, dy):
    """The eval backward with running statistics in torch's differentiable ops.

    The layer is the per-channel affine map y = (x - running_mean) * invstd * w + b with
    invstd = 1/sqrt(running_var + eps), so grad_input = dy * w * invstd, grad_weight =
    sum(dy * (x - running_mean) * invstd) and grad_bias = sum(dy), over every dim but the
    channel's. They are computed in float64 and rounded once to the argument dtypes (as the
    C path) and autograd records them, which gives the second-order terms."""
    call = ctx.call
    x, weight, rm, rv = ctx.saved_tensors
    want_x, want_w, want_b = ctx.needs_input_grad[:3]
    shape = (1, -1) + (1,) * (x.dim() - 2)
    dims = [0] + list(range(2, x.dim()))
    invstd = 1.0 / torch.sqrt(rv.detach().double() + call.cfg.eps)
    d = dy.double()
    gi = gw = gb = None
    if want_x:
        scale = invstd if weight is None else weight.double() * invstd
        gi = (d * scale.view(shape)).to(x.dtype)
    if want_w and weight is not None:
        xhat = (x.double() - rm.detach().double().view(shape)) * invstd.view(shape)
        gw = (d * xhat).sum(dims).to(weight.dtype)
    if want_b and call.bias_dtype is not None:
        gb = d.sum(dims).to(call.bias_dtype)
    return gi, gw, gb, None


def _native_backward(ctx, dy):
    """The backward by libsyncbn (sbn_syncbn_backward): (grad_input, grad_weight, grad_bias,
    None), each None when not wanted."""
    call = ctx.call
    comm, cfg = call.comm, call.cfg
    x, weight, rm, rv = ctx.saved_tensors
    want_x, want_w, want_b = ctx.needs_input_grad[:3]
    gi = torch.empty_like(x) if want_x else None
    gw = torch.empty_like(weight) if want_w and weight is not None else None
    gb = torch.empty(x.size(1), dtype=call.bias_dtype) if want_b and call.bias_dtype else None
    xv, wv, rmv, rvv, smv, siv = call.views
    try:
        dv = V.view(dy, "grad_output")
        views = [V.view(t, n, True) for t, n in ((gi, "grad_input"), (gw, "grad_weight"),
                                                 (gb, "grad_bias"))]
        ws, nb = _workspace(x, xv, comm)
    except _errors.SyncBNError as e:
        if cfg.training:
            comm.fail(e.status)
        raise
    if cfg.training:
        comm.set_step(call.step)
    # the running stats are read in eval only (saved then); training passes none
    io = BackwardIO(_ptr(dv), _ptr(xv), _ptr(wv), _ptr(rmv if rm is not None else None),
                    _ptr(rvv if rv is not None else None), _ptr(smv), _ptr(siv),
                    call.global_count, *[_ptr(v) for v in views])
    s = lib.sbn_syncbn_backward(comm.handle, ctypes.byref(cfg), ctypes.byref(io), ws, nb,
                                _runtime.pool())
    if s < 0:
        raise comm.error(s, "backward of " + _describe(call.module, x))
    return gi, gw, gb, None


def _eager_only(fn):
    """fn, with torch.compile's tracer (dynamo, torch >= 2) told to leave it alone: its
    ctypes calls and the C layer's collectives run eagerly, the compiled graph breaks around
    them. torch 1.x has no dynamo: fn itself."""
    disable = getattr(getattr(torch, "compiler", None), "disable", None)  # torch >= 2.1
    if disable is None:
        try:
            import torch._dynamo as dynamo  # torch 2.0
        except ImportError:
            return fn
        disable = dynamo.disable
    return disable(fn)


def _graph_capture():
    """True while a tracer records the forward instead of running it: torch.jit.trace,
    torch.onnx.export, torch.compile / torch.export (torch >= 2, where they say so)."""
    if torch.jit.is_tracing():
        return True
    is_exporting = getattr(getattr(torch, "onnx", None), "is_in_onnx_export", None)
    if is_exporting is not None and is_exporting():
        return True
    compiler = getattr(torch, "compiler", None)
    for name in ("is_compiling", "is_exporting"):
        probe = getattr(compiler, name, None)
        if probe is not None and probe():
            return True
    return False


def _plain_eval(m, x):
    """Eval with running statistics is plain batch norm with no collective: while a tracer
    records the forward (or on a tensor subclass such as torch's fake tensors) it is torch's
    F.batch_norm, which tracers record as one batch_norm node (an autograd.Function with a
    Python argument and ctypes calls cannot be traced); None otherwise."""
    if m.training or m.running_mean is None or m.running_var is None:
        return None
    if type(x) not in (torch.Tensor, torch.nn.Parameter) or _graph_capture():
        return torch.nn.functional.batch_norm(x, m.running_mean, m.running_var, m.weight,
                                              m.bias, False, 0.0, m.eps)
    return None


_MAX_RANK = 8  # the C library's views; more dims are flattened after the channel


def sync_batch_norm(m, x):
    """The forward of a SyncBN module `m` (ours or torch's) on a CPU tensor `x`."""
    if isinstance(x, torch.Tensor):
        y = _plain_eval(m, x)  # outside _eager_only: torch.compile traces it without a break
        if y is not None:
            return y
    return _sync_batch_norm(m, x)


@_eager_only
def _sync_batch_norm(m, x):
    if isinstance(x, torch.Tensor) and x.dim() > _MAX_RANK:
        # batch norm reduces every dim but the channel's alike: (N, C, d2, ..., dk) is
        # (N, C, d2 * ... * dk), a view when x's trailing dims are contiguous, else a copy
        rest = 1
        for d in x.shape[2:]:
            rest *= d
        y = _sync_batch_norm(m, x.reshape(x.size(0), x.size(1), rest))
        state_of(m).input_dim = x.dim()
        return y.reshape(x.shape)
    st = state_of(m)
    group = _sync_group(m) if m.training else False
    comm = st.group(m.process_group) if group is not False else st.local()
    try:
        _check_input(m, x)
        bn_training = m.training or (m.running_mean is None and m.running_var is None)
        if bn_training and group is False and x.numel() // x.size(1) == 1:
            raise _errors.bad_input(_errors.ERR_BAD_VALUE, "Expected more than 1 value per "
                                    "channel when training, got input size %s"
                                    % (x.size(),))  # torch.Size([1, 3]), as F.batch_norm
    except _errors.SyncBNError as e:
        if group is not False:
            comm.fail(e.status)  # the peers raise PeerFailedError instead of waiting
        raise
    st.input_dim = x.dim()
    if not m.training and m.running_mean is not None and m.running_var is not None and \
            not _needs_grad(x, m.weight, m.bias):
        return _eval_without_grad(m, x, comm, _config(m, False))
    call = _Call()
    call.module, call.comm = m, comm
    call.cfg = _config(m, m.training)
    if group is not False:
        st.steps += 1
    call.step = st.steps
    return _SyncBNFunction.apply(x, m.weight, m.bias, call)


def _needs_grad(*tensors):
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _eval_without_grad(m, x, comm, cfg):
    """Eval with running statistics when no gradient is wanted (inference, validation under
    torch.no_grad()): the C call alone, without the autograd Function and without the
    save_mean/save_invstd that only a backward reads. The same call as the Function's
    forward, hence the same output bits; a validation pass makes it once per layer."""
    y = torch.empty_like(x)
    xv, yv = V.view(x, "input"), V.view(y, "output")
    wv, bv = V.view(m.weight, "weight"), V.view(m.bias, "bias")
    rmv, rvv = V.view(m.running_mean, "running_mean"), V.view(m.running_var, "running_var")
    ws, nb = _workspace(x, xv, comm)
    io = ForwardIO(_ptr(xv), _ptr(wv), _ptr(bv), _ptr(rmv), _ptr(rvv), None, _ptr(yv), None,
                   None, None)
    s = lib.sbn_syncbn_forward(comm.handle, ctypes.byref(cfg), ctypes.byref(io), ws, nb,
                               _runtime.pool())
    if s < 0:
        raise comm.error(s, _describe(m, x))
    return y
