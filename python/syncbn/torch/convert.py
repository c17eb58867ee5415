"""Swapping batch norm layers for syncbn's SyncBatchNorm, and back for export.

``convert_sync_batchnorm(module, process_group)`` does what
``torch.nn.SyncBatchNorm.convert_sync_batchnorm`` does (recursively replaces every
``_BatchNorm``, torch's SyncBatchNorm included, sharing the weight and bias
Parameters and the running buffers, copying ``training`` and ``qconfig``) but
builds ``syncbn.torch.SyncBatchNorm`` and remembers the class it replaced.
``revert_sync_batchnorm(module)`` turns ours and torch's SyncBatchNorm back into
that BatchNorm1d/2d/3d class, or, for a module built as SyncBatchNorm directly,
into the class matching the rank of the inputs it has seen (2 or 3 dims:
BatchNorm1d, 4: BatchNorm2d, 5: BatchNorm3d), sharing the same tensors.

A layer whose class is a ``_BatchNorm`` with a forward of its own (timm's
BatchNormAct2d and SyncBatchNormAct: batch norm, then dropout and an activation)
is replaced as torch's converter replaces it, by a layer that computes batch
norm alone; its extra work is lost, so the conversion warns, naming the layer
and the framework's own converter (which ``patch()`` serves).
"""
import warnings

import torch
from torch.nn.modules.batchnorm import _BatchNorm

from .module import SYNC_CLASSES, SyncBatchNorm
from ._state import peek, state_of

_PLAIN = (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)
_BY_DIM = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 4: torch.nn.BatchNorm2d,
           5: torch.nn.BatchNorm3d}


def _share(src, dst):
    """dst takes src's parameters, buffers and flags (the same tensor objects)."""
    if src.affine:
        with torch.no_grad():
            dst.weight = src.weight
            dst.bias = src.bias
    dst.running_mean = src.running_mean
    dst.running_var = src.running_var
    dst.num_batches_tracked = src.num_batches_tracked
    dst.training = src.training
    if hasattr(src, "qconfig"):
        dst.qconfig = src.qconfig


def _own_forward(module):
    """The class that defines `module`'s forward when it is neither torch's nor syncbn's
    (a framework's batch norm that does more than batch norm), else None."""
    for klass in type(module).__mro__:
        if "forward" in klass.__dict__:
            home = klass.__module__ or ""
            if home == "torch" or home.startswith(("torch.", "syncbn.")):
                return None
            return klass
    return None


def _warn_lost_forward(module, path, cls):
    klass = _own_forward(module)
    if klass is None:
        return
    warnings.warn("convert_sync_batchnorm: %s is a %s.%s, whose class has a forward of its "
                  "own (it may do more than batch norm, as timm's BatchNormAct2d adds an "
                  "activation); the %s that replaces it computes batch norm alone, as "
                  "torch.nn.SyncBatchNorm.convert_sync_batchnorm's would (its children %s stay "
                  "attached but are not called). Use the framework's own converter (timm: "
                  "timm.layers.convert_sync_batchnorm) after syncbn.torch.patch(), which runs "
                  "torch.nn.SyncBatchNorm subclasses on syncbn"
                  % (path or "the module", klass.__module__, klass.__qualname__, cls.__name__,
                     sorted(name for name, _ in module.named_children()) or "(none)"),
                  stacklevel=3)


def convert_to(module, process_group, cls, _path="", **extra):
    """`module` with every _BatchNorm that is not a `cls` replaced by a `cls` (built with
    the keyword arguments `extra`, e.g. reproducible=True)."""
    out = module
    if isinstance(module, _BatchNorm) and not isinstance(module, cls):
        _warn_lost_forward(module, _path, cls)
        out = cls(module.num_features, module.eps, module.momentum, module.affine,
                  module.track_running_stats, process_group, **extra)
        _share(module, out)
        old = peek(module)
        new = state_of(out)
        if isinstance(module, SYNC_CLASSES):
            new.replaced = old.replaced if old is not None else None
        else:
            new.replaced = type(module)
        new.input_dim = old.input_dim if old is not None else None
    for name, child in module.named_children():
        out.add_module(name, convert_to(child, process_group, cls,
                                        _path + "." + name if _path else name, **extra))
    del module
    return out


def convert_sync_batchnorm(module, process_group=None, *, reproducible=False):
    """`module` with every batch norm layer replaced by syncbn's SyncBatchNorm
    (reproducible=True: the bits of training do not depend on the world size)."""
    extra = {"reproducible": True} if reproducible else {}
    return convert_to(module, process_group, SyncBatchNorm, **extra)


def _plain_class(module, path):
    st = peek(module)
    for cls in getattr(st and st.replaced, "__mro__", ()):
        if cls in _PLAIN:
            return cls
    cls = _BY_DIM.get(st and st.input_dim)
    if cls is None:
        raise ValueError("revert_sync_batchnorm: %s (%s(%d)) replaced no BatchNorm1d/2d/3d and "
                         "has seen no input, so its batch norm class is unknown; run one forward "
                         "first" % (path or "the module", type(module).__name__,
                                    module.num_features))
    return cls


def revert_sync_batchnorm(module, _path=""):
    """`module` with every SyncBatchNorm (syncbn's or torch's) back as BatchNorm1d/2d/3d."""
    out = module
    if isinstance(module, SYNC_CLASSES):
        cls = _plain_class(module, _path)
        out = cls(module.num_features, module.eps, module.momentum, module.affine,
                  module.track_running_stats)
        _share(module, out)
    for name, child in module.named_children():
        out.add_module(name, revert_sync_batchnorm(child, _path + "." + name if _path else name))
    del module
    return out
