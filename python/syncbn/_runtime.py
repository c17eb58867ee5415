"""The process-wide thread pool and the per-thread workspace cache.

One ``sbn_pool`` serves every op and layer call of the process. Its size is read
once, at first use: ``SBN_NUM_THREADS`` (the variable the aclnn path reads) when
set, else the library's default (``sbn_pool_default_threads``: the affinity
mask within the cgroup's CPU quota, and this rank's share of the machine when a
launcher says several ranks share it), no more than ``torch.get_num_threads()``
when torch is importable. ``set_num_threads(n)`` replaces it. After ``fork()``
the child drops the parent's pool (its threads do not exist there) and builds
its own on first use.

Workspaces are grow-only byte buffers, one per Python thread, aligned to 64
bytes, so that a training step does not allocate (and page-fault) scratch memory.
"""
import ctypes
import os
import threading

import numpy as np

from . import _errors
from ._lib import lib

_lock = threading.Lock()
_pool = None
_pool_threads = None
_local = threading.local()


def _default_threads():
    env = os.environ.get("SBN_NUM_THREADS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if not 1 <= n <= 1024:
            raise _errors.bad_input(_errors.ERR_BAD_VALUE, "SBN_NUM_THREADS is %r; expected a "
                                    "whole number from 1 to 1024" % env)
        return n
    # the library's default: the affinity mask within the cgroup's CPU quota and the local
    # ranks' share, which torch's own default (the cores of the machine) does not know of
    cpus = max(1, int(lib.sbn_pool_default_threads()))
    try:
        import torch
        return max(1, min(torch.get_num_threads(), cpus))
    except ImportError:
        return cpus


def _create(n):
    handle = ctypes.c_void_p()
    _errors.check(lib.sbn_pool_create(int(n), ctypes.byref(handle)), "sbn_pool_create")
    return handle


def pool():
    """The process-wide pool handle (created on first use)."""
    global _pool, _pool_threads
    if _pool is None:
        with _lock:
            if _pool is None:
                n = _default_threads()
                _pool = _create(n)
                _pool_threads = n
    return _pool


def set_num_threads(n):
    """Replaces the process-wide pool with one of `n` threads (1..1024)."""
    global _pool, _pool_threads
    if not isinstance(n, int) or not 1 <= n <= 1024:
        raise _errors.bad_input(_errors.ERR_BAD_VALUE, "threads is %r; expected 1 to 1024" % (n,))
    new = _create(n)
    with _lock:
        old, _pool, _pool_threads = _pool, new, n
    if old is not None:
        lib.sbn_pool_destroy(old)


def get_num_threads():
    """The thread count of the process-wide pool."""
    pool()
    return _pool_threads


def _after_fork_in_child():
    global _pool, _pool_threads
    _pool, _pool_threads = None, None  # the parent's threads are not here; leak the handle
    _local.__dict__.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def workspace(nbytes):
    """(pointer, bytes) of this thread's workspace, grown to at least nbytes."""
    buf = getattr(_local, "buf", None)
    if buf is None or _local.size < nbytes:
        size = max(int(nbytes), 4096)
        buf = np.empty(size + 64, dtype=np.uint8)
        _local.buf, _local.size = buf, size
        _local.ptr = (buf.ctypes.data + 63) // 64 * 64
    return _local.ptr, _local.size


def workspace_for(size_fn, *args):
    """Calls ``sbn_<op>_workspace_size(*args, &bytes)`` and returns (pointer, bytes)."""
    n = ctypes.c_size_t()
    _errors.check(size_fn(*args, ctypes.byref(n)), size_fn.__name__)
    if n.value == 0:
        return None, 0
    return workspace(n.value)
