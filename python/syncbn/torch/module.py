"""``syncbn.torch.SyncBatchNorm``: torch.nn.SyncBatchNorm that trains on CPU tensors.

A subclass of ``torch.nn.SyncBatchNorm`` with the same constructor, parameters,
buffers and state_dict keys, so it loads torch's checkpoints, passes
``isinstance(m, nn.SyncBatchNorm)`` and ``_BatchNorm`` checks, and is converted,
saved and wrapped in DDP like torch's. Its forward runs libsyncbn on CPU tensors
(see ``_function``): synchronised over ``process_group`` (default: the world) when
training in a process group of more than one rank, plain batch norm otherwise.
Input of any rank from 2 to 8 is accepted, as torch's SyncBatchNorm does.
"""
import torch

from ._function import sync_batch_norm
from ._state import state_of


class SyncBatchNorm(torch.nn.SyncBatchNorm):
    """Synchronised batch norm over torch.distributed, computed by libsyncbn on CPU.

    Arguments as ``torch.nn.SyncBatchNorm``: num_features, eps=1e-5, momentum=0.1
    (None: cumulative average), affine=True, track_running_stats=True,
    process_group=None, device=None, dtype=None.
    """

    def forward(self, input):
        return sync_batch_norm(self, input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Swaps every batch norm of `module` for this class (see syncbn.torch.convert)."""
        from .convert import convert_sync_batchnorm
        return convert_sync_batchnorm(module, process_group)

    @property
    def seen_input_dim(self):
        """The rank of the last input this module normalised (None before the first)."""
        return state_of(self).input_dim
