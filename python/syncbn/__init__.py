"""syncbn: Synchronized Batch Normalization on CPUs, from Python.

A pure-Python package over libsyncbn (ctypes; see ``_lib`` for where the library
is looked up). The top level holds the native ops (``stats``, ``elemt``, ...,
zero-copy on numpy arrays and torch CPU tensors of any strides, f32/f64/f16/bf16),
their PyTorch-named forms (``batch_norm_stats`` ...), the errors, and the size of
the process-wide thread pool (``SBN_NUM_THREADS``, default the library's
``sbn_pool_default_threads()``, no more than ``torch.get_num_threads()``). The
``nn.Module``, the converters, ``patch()`` and BatchNorm folding are in
``syncbn.torch``.
"""
from ._errors import (BadInputError, CommError, CommMismatchError, CommTimeoutError,
                      PeerFailedError, SyncBNError)
from ._lib import lib as _lib
from ._runtime import get_num_threads, set_num_threads
from .ops import (backward_elemt, backward_reduce, batch_norm, batch_norm_backward, elemt,
                  fold_conv, gather_moments, gather_stats_from_sums, gather_stats_with_counts,
                  reduce, stats, stats_moments)
from .torch_ops import (batch_norm_backward_elemt, batch_norm_backward_reduce, batch_norm_elemt,
                        batch_norm_gather_stats, batch_norm_gather_stats_with_counts,
                        batch_norm_stats)

__version__ = _lib.sbn_version().decode()
library_path = _lib.sbn_path


def last_error():
    """The library's sentence about the calling thread's last failure ("" after a success)."""
    return _lib.sbn_last_error().decode(errors="replace")
