"""``syncbn.torch.SyncBatchNorm``: torch.nn.SyncBatchNorm that trains on CPU tensors.

The constructor, attributes, parameters, buffers and state_dict keys are those of
``torch.nn.SyncBatchNorm`` (it loads torch's checkpoints and torch's loads ours).
It is a subclass of ``torch.nn.SyncBatchNorm`` (hence a ``_BatchNorm``), so
``isinstance(m, torch.nn.SyncBatchNorm)`` holds for the tools that look for SyncBN
layers: DistributedDataParallel's ``has_sync_bn`` logging, Lightning's and
mmengine's revert. DistributedDataParallel (torch 1.13 and 2.x) refuses every
such layer in a CPU model ("SyncBatchNorm layers only work with GPU modules",
``_passing_sync_batchnorm_handle``): importing this module wraps that check so
that it spares this class's layers, which run on CPU, and still refuses torch's
own (unless ``patch()`` routes them here too). Its forward runs libsyncbn on CPU tensors
(see ``_function``): synchronised over ``process_group`` (default: the world)
when training in a process group of more than one rank, plain batch norm
otherwise. Inputs of 2 or more dims are accepted, as torch's SyncBatchNorm does.
``torch.fx`` traces it as a leaf module; in eval, ``torch.jit.trace`` and
``torch.onnx.export`` record plain batch norm.
"""
import torch
import torch.fx

from .. import _errors
from ._function import sync_batch_norm
from ._state import state_of


class SyncBatchNorm(torch.nn.SyncBatchNorm):
    """Synchronised batch norm over torch.distributed, computed by libsyncbn on CPU.

    Arguments as ``torch.nn.SyncBatchNorm``: num_features, eps=1e-5, momentum=0.1
    (None: cumulative average), affine=True, track_running_stats=True,
    process_group=None, device=None, dtype=None; and one of ours, keyword only:
    reproducible=False. When True, training gives the same bits (outputs, running
    stats, gradients) for every world size, split of the global batch over the
    ranks and thread count, equal to one process on the whole batch
    (sbn_syncbn_config.reproducible; docs/numerics.md).
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 reproducible=False):
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         process_group, device=device, dtype=dtype)
        self.process_group = process_group
        self.reproducible = bool(reproducible)

    def extra_repr(self):
        text = super().extra_repr()
        return text + ", reproducible=True" if self.reproducible else text

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise _errors.bad_input(_errors.ERR_BAD_RANK, "expected at least 2D input (got %dD "
                                    "input)" % input.dim())

    def forward(self, input):
        if isinstance(input, torch.fx.Proxy):
            # torch.fx traces this module as a leaf (one call_module node), as it does
            # torch.nn's own modules; its forward cannot run on a Proxy
            tracer = input.tracer
            return tracer.create_proxy("call_module", tracer.path_of_module(self), (input,), {})
        return sync_batch_norm(self, input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None, *, reproducible=False):
        """Swaps every batch norm of `module` for this class (see syncbn.torch.convert)."""
        from .convert import convert_sync_batchnorm
        return convert_sync_batchnorm(module, process_group, reproducible=reproducible)

    @property
    def seen_input_dim(self):
        """The rank of the last input this module normalised (None before the first)."""
        return state_of(self).input_dim


# the classes revert_sync_batchnorm turns back into plain batch norm
SYNC_CLASSES = (SyncBatchNorm, torch.nn.SyncBatchNorm)


def _spare_ours(check):
    """DistributedDataParallel's SyncBN check, sparing CPU models whose SyncBN layers are all
    syncbn's (any other SyncBatchNorm still gets torch's verdict)."""
    def _passing_sync_batchnorm_handle(self, module):
        if getattr(self, "device_type", None) == "cpu" and all(
                isinstance(m, SyncBatchNorm) for m in module.modules()
                if isinstance(m, torch.nn.SyncBatchNorm)):
            return None
        return check(self, module)
    _passing_sync_batchnorm_handle.syncbn_spares = check
    return _passing_sync_batchnorm_handle


def _install_ddp_shim():
    ddp = getattr(getattr(torch.nn, "parallel", None), "DistributedDataParallel", None)
    check = getattr(ddp, "__dict__", {}).get("_passing_sync_batchnorm_handle")
    if check is not None and not hasattr(check, "syncbn_spares"):
        ddp._passing_sync_batchnorm_handle = _spare_ours(check)


_install_ddp_shim()
