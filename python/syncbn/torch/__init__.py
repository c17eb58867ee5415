"""syncbn for PyTorch: the SyncBatchNorm module, converters, the patch, and BN folding.

``SyncBatchNorm`` is torch.nn.SyncBatchNorm computed by libsyncbn on CPU over
torch.distributed (gloo). ``convert_sync_batchnorm`` / ``revert_sync_batchnorm``
swap batch norm layers in and out; ``patch()`` makes the unchanged
``torch.nn.SyncBatchNorm`` run through syncbn on CPU tensors; ``fold_batchnorm``
folds eval batch norms into the convolutions before them for deployment.
"""
from .convert import convert_sync_batchnorm, revert_sync_batchnorm
from .fold import fold_batchnorm
from .module import SyncBatchNorm
from .patch import is_patched, patch, unpatch

__all__ = ["SyncBatchNorm", "convert_sync_batchnorm", "revert_sync_batchnorm", "patch", "unpatch",
           "is_patched", "fold_batchnorm"]
