"""``patch()``: the unchanged ``torch.nn.SyncBatchNorm`` runs through syncbn on CPU tensors.

After ``syncbn.torch.patch()``, ``torch.nn.SyncBatchNorm`` (instances built before
or after, and those made by ``torch.nn.SyncBatchNorm.convert_sync_batchnorm``)
computes CPU inputs with libsyncbn over torch.distributed, as
``syncbn.torch.SyncBatchNorm`` does, so a training script with a ``--sync-bn``
switch trains on CPU after one added line. Inputs on any other device (CUDA) go to
torch's own forward unchanged. The class, its constructor and its state_dict stay
torch's; ``convert_sync_batchnorm`` also records the class it replaced, for
``revert_sync_batchnorm``. DistributedDataParallel's refusal of SyncBatchNorm in
CPU models (torch 1.13: "SyncBatchNorm layers only work with GPU modules") is
lifted for CPU models. ``unpatch()`` restores torch's methods.
"""
import threading

import torch

from ._function import sync_batch_norm

_lock = threading.Lock()
_saved = {}


def _forward(self, input):
    if isinstance(input, torch.Tensor) and input.device.type == "cpu":
        return sync_batch_norm(self, input)
    return _saved["forward"](self, input)


def _ddp_sync_bn_check(self, module):
    if self.device_type != "cpu":
        _saved["ddp_check"](self, module)


def _convert(cls, module, process_group=None):
    from .convert import convert_to
    return convert_to(module, process_group, cls)


def patch():
    """Routes torch.nn.SyncBatchNorm's CPU forwards through syncbn (idempotent)."""
    cls = torch.nn.SyncBatchNorm
    with _lock:
        if _saved:
            return
        _saved["forward"] = cls.__dict__["forward"]
        _saved["convert_sync_batchnorm"] = cls.__dict__["convert_sync_batchnorm"]
        cls.forward = _forward
        cls.convert_sync_batchnorm = classmethod(_convert)
        ddp = torch.nn.parallel.DistributedDataParallel
        check = ddp.__dict__.get("_passing_sync_batchnorm_handle")
        if check is not None:
            _saved["ddp_check"] = check
            ddp._passing_sync_batchnorm_handle = _ddp_sync_bn_check


def unpatch():
    """Restores torch's own forward and convert_sync_batchnorm."""
    cls = torch.nn.SyncBatchNorm
    with _lock:
        if not _saved:
            return
        cls.forward = _saved.pop("forward")
        cls.convert_sync_batchnorm = _saved.pop("convert_sync_batchnorm")
        if "ddp_check" in _saved:
            torch.nn.parallel.DistributedDataParallel._passing_sync_batchnorm_handle = \
                _saved.pop("ddp_check")


def is_patched():
    return bool(_saved)
