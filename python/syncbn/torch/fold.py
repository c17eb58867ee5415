"""BatchNorm folding for deployment: Conv + BatchNorm in eval become one Conv.

``fold_batchnorm(model)`` finds, in each module's children in registration
order (the forward order of ``nn.Sequential`` and of the usual conv/bn blocks,
e.g. torchvision's ResNets), every Conv1d/2d/3d directly followed by a batch norm
with running statistics (torch's BatchNorm1d/2d/3d, torch's or syncbn's
SyncBatchNorm) over the conv's output channels, folds the batch norm into the
conv's weight and bias with ``sbn_fold_conv`` (in double, rounded once; a conv
without bias gets one) and replaces the batch norm with ``nn.Identity``. The
model must be in eval mode: folding uses the running statistics. The model is
changed in place and returned.
"""
import torch
from torch.nn.modules.batchnorm import _BatchNorm

from .. import ops

_CONVS = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)


def _foldable(conv, bn):
    return (isinstance(conv, _CONVS) and isinstance(bn, _BatchNorm) and
            bn.running_mean is not None and bn.running_var is not None and
            bn.num_features == conv.out_channels)


def _fold(conv, bn):
    w = conv.weight.detach()
    b = conv.bias.detach() if conv.bias is not None else None
    bw = bn.weight.detach() if bn.weight is not None else None
    bb = bn.bias.detach() if bn.bias is not None else None
    fw, fb = ops.fold_conv(w, b, bw, bb, bn.running_mean, bn.running_var, bn.eps)
    conv.weight = torch.nn.Parameter(fw, requires_grad=conv.weight.requires_grad)
    conv.bias = torch.nn.Parameter(fb, requires_grad=conv.weight.requires_grad)


def fold_batchnorm(model):
    """Folds every Conv -> BatchNorm pair of an eval `model` in place; returns the model."""
    if model.training:
        raise ValueError("fold_batchnorm needs a model in eval mode (call model.eval()): folding "
                         "uses the running statistics")
    pairs = []
    for parent in model.modules():
        names = list(parent._modules)
        for a, b in zip(names, names[1:]):
            conv, bn = parent._modules[a], parent._modules[b]
            if _foldable(conv, bn):
                if bn.training:
                    raise ValueError("fold_batchnorm: %s is in training mode" % b)
                pairs.append((parent, a, b))
    for parent, a, b in pairs:
        _fold(parent._modules[a], parent._modules[b])
        parent._modules[b] = torch.nn.Identity()
    return model
