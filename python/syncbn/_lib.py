"""Finding and loading libsyncbn, and the ctypes declarations of its C API.

The library is looked up in this order, and the first one that loads wins:
the path in the ``SBN_LIBRARY`` environment variable; a ``libsyncbn.so`` next to
the package (the installed layout puts a symlink in the package directory); the
build tree of a source checkout (``build/release/`` two levels above
``python/syncbn``); the system loader path (``libsyncbn.so.0.2``, then whatever
``ctypes.util.find_library("syncbn")`` names). When none works, ``ImportError``
lists every place tried and why it failed. Only declarations live here: the
Python wrappers are in the other modules.
"""
import ctypes
import ctypes.util
import os

MAX_RANK = 8


class Tensor(ctypes.Structure):
    """``sbn_tensor``: a strided view (strides in elements)."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_RANK), ("strides", ctypes.c_int64 * MAX_RANK)]


class Timing(ctypes.Structure):
    """``sbn_syncbn_timing``."""
    _fields_ = [("stats_seconds", ctypes.c_double), ("comm_seconds", ctypes.c_double),
                ("elemt_seconds", ctypes.c_double)]


class LayerConfig(ctypes.Structure):
    """``sbn_syncbn_config``; ``size`` is set by ``sbn_syncbn_config_init``."""
    _fields_ = [("size", ctypes.c_size_t), ("eps", ctypes.c_double),
                ("momentum", ctypes.c_double), ("cumulative", ctypes.c_int),
                ("training", ctypes.c_int), ("sync_grad_params", ctypes.c_int),
                ("nan_guard", ctypes.c_int), ("reproducible", ctypes.c_int),
                ("timing", ctypes.POINTER(Timing))]


class ForwardIO(ctypes.Structure):
    """``sbn_syncbn_forward_io``: the tensors of a forward call (None = absent)."""
    _fields_ = [("x", ctypes.POINTER(Tensor)), ("weight", ctypes.POINTER(Tensor)),
                ("bias", ctypes.POINTER(Tensor)), ("running_mean", ctypes.POINTER(Tensor)),
                ("running_var", ctypes.POINTER(Tensor)),
                ("num_batches_tracked", ctypes.POINTER(ctypes.c_int64)),
                ("y", ctypes.POINTER(Tensor)), ("save_mean", ctypes.POINTER(Tensor)),
                ("save_invstd", ctypes.POINTER(Tensor)),
                ("global_count", ctypes.POINTER(ctypes.c_int64))]


class BackwardIO(ctypes.Structure):
    """``sbn_syncbn_backward_io``: the tensors of a backward call (None = absent)."""
    _fields_ = [("dy", ctypes.POINTER(Tensor)), ("x", ctypes.POINTER(Tensor)),
                ("weight", ctypes.POINTER(Tensor)), ("running_mean", ctypes.POINTER(Tensor)),
                ("running_var", ctypes.POINTER(Tensor)), ("save_mean", ctypes.POINTER(Tensor)),
                ("save_invstd", ctypes.POINTER(Tensor)), ("global_count", ctypes.c_int64),
                ("grad_input", ctypes.POINTER(Tensor)), ("grad_weight", ctypes.POINTER(Tensor)),
                ("grad_bias", ctypes.POINTER(Tensor))]


ALLGATHER_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_void_p)
BARRIER_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
DESTROY_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
MERGE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
ALLREDUCE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_size_t, MERGE_FN)
ALLREDUCE_INT64_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.c_size_t, ctypes.c_int)
INT_SUM, INT_MAX = 0, 1  # SBN_COMM_INT_SUM, SBN_COMM_INT_MAX


class CommCallbacks(ctypes.Structure):
    """``sbn_comm_callbacks``; every member must be listed (the library copies the whole
    struct). A NULL member is "not provided"."""
    _fields_ = [("allgather", ALLGATHER_FN), ("barrier", BARRIER_FN), ("destroy", DESTROY_FN),
                ("allreduce", ALLREDUCE_FN), ("allreduce_int64", ALLREDUCE_INT64_FN)]


_T = ctypes.POINTER(Tensor)
_VP = ctypes.c_void_p
_D = ctypes.c_double
_I = ctypes.c_int
_I64 = ctypes.c_int64
_SZ = ctypes.c_size_t
_PSZ = ctypes.POINTER(ctypes.c_size_t)
_WS = [_VP, _SZ, _VP]  # workspace, workspace_bytes, pool

# name: (argument types); every function returns sbn_status (int) unless listed in _RESTYPES.
_SIGNATURES = {
    "sbn_status_name": [_I],
    "sbn_status_str": [_I],
    "sbn_last_error": [],
    "sbn_version": [],
    "sbn_pool_create": [_I, ctypes.POINTER(_VP)],
    "sbn_pool_destroy": [_VP],
    "sbn_pool_threads": [_VP],
    "sbn_pool_default_threads": [],
    "sbn_stats_workspace_size": [_T, _PSZ],
    "sbn_stats": [_T, _D, _T, _T] + _WS,
    "sbn_stats_moments_workspace_size": [_T, _PSZ],
    "sbn_stats_moments": [_T, _VP] + _WS,
    "sbn_gather_stats_with_counts_workspace_size": [_T, _PSZ],
    "sbn_gather_stats_with_counts": [_T, _T, _T, _D, _D, _T, _T, _T, _T] + _WS,
    "sbn_gather_moments": [_VP, _I64, _I64, _D, _D, _T, _T, _VP, _T, _T],
    "sbn_gather_stats_from_sums": [_T, _T, _T, _D, _D, _T, _T, _T, _T],
    "sbn_reduce_workspace_size": [_T, _PSZ],
    "sbn_reduce": [_T, _T, _T] + _WS,
    "sbn_elemt_workspace_size": [_T, _PSZ],
    "sbn_elemt": [_T, _T, _T, _T, _T, _T] + _WS,
    "sbn_backward_reduce_workspace_size": [_T, _PSZ],
    "sbn_backward_reduce": [_T, _T, _T, _T, _T, _T, _T, _T] + _WS,
    "sbn_backward_elemt_workspace_size": [_T, _PSZ],
    "sbn_backward_elemt": [_T, _T, _T, _T, _T, _T, _T, _I64, _T] + _WS,
    "sbn_batch_norm_workspace_size": [_T, _PSZ],
    "sbn_batch_norm": [_T, _T, _T, _I, _D, _D, _T, _T, _T, _T, _T] + _WS,
    "sbn_batch_norm_backward_workspace_size": [_T, _PSZ],
    "sbn_batch_norm_backward": [_T, _T, _T, _T, _T, _T, _T, _I, _D, _T, _T, _T] + _WS,
    "sbn_fold_conv": [_T, _T, _T, _T, _T, _T, _D, _T, _T],
    "sbn_comm_threads_create": [_I, _D, ctypes.POINTER(_VP)],
    "sbn_comm_callbacks_create": [_I, _I, ctypes.POINTER(CommCallbacks), _VP, ctypes.POINTER(_VP)],
    "sbn_comm_rank": [_VP],
    "sbn_comm_size": [_VP],
    "sbn_comm_set_step": [_VP, _I64],
    "sbn_comm_fail": [_VP, _I],
    "sbn_comm_destroy": [_VP],
    "sbn_comm_traffic": [_VP, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)],
    "sbn_syncbn_config_init": [ctypes.POINTER(LayerConfig), _SZ],
    "sbn_syncbn_workspace_size": [_T, _PSZ],
    "sbn_syncbn_forward": [_VP, ctypes.POINTER(LayerConfig), ctypes.POINTER(ForwardIO)] + _WS,
    "sbn_syncbn_backward": [_VP, ctypes.POINTER(LayerConfig), ctypes.POINTER(BackwardIO)] + _WS,
}
_RESTYPES = {"sbn_status_name": ctypes.c_char_p, "sbn_status_str": ctypes.c_char_p,
             "sbn_last_error": ctypes.c_char_p, "sbn_version": ctypes.c_char_p,
             "sbn_pool_destroy": None, "sbn_pool_threads": _I, "sbn_comm_rank": _I,
             "sbn_comm_size": _I, "sbn_comm_destroy": None, "sbn_comm_traffic": None}
# Functions a library may lack (older builds); their wrappers raise when called.
_OPTIONAL = {"sbn_fold_conv"}


def _candidates():
    """(description, path) pairs in search order."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    env = os.environ.get("SBN_LIBRARY")
    if env:
        out.append(("SBN_LIBRARY", env))
    for d in (here, os.path.dirname(here)):
        for name in ("libsyncbn.so", "libsyncbn.so.0.2"):
            out.append(("next to the package", os.path.join(d, name)))
    checkout = os.path.dirname(os.path.dirname(here))
    out.append(("source checkout build tree",
                os.path.join(checkout, "build", "release", "libsyncbn.so")))
    out.append(("system loader path", "libsyncbn.so.0.2"))
    found = ctypes.util.find_library("syncbn")
    if found:
        out.append(("system loader path (find_library)", found))
    return out


def _declare(lib):
    for name, argtypes in _SIGNATURES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if name in _OPTIONAL:
                continue
            raise OSError("it has no symbol %s (an older libsyncbn?)" % name)
        fn.argtypes = argtypes
        fn.restype = _RESTYPES.get(name, _I)
    return lib


def load():
    """Loads libsyncbn from the first candidate that works; ImportError listing all otherwise."""
    tried = []
    for where, path in _candidates():
        is_path = os.sep in path
        if is_path and not os.path.exists(path):
            tried.append("  %s: %s (does not exist)" % (where, path))
            continue
        try:
            lib = _declare(ctypes.CDLL(path))
        except OSError as e:
            tried.append("  %s: %s (%s)" % (where, path, e))
            continue
        lib.sbn_path = os.path.realpath(path) if is_path else path
        return lib
    raise ImportError("syncbn: could not load libsyncbn; tried, in order:\n" + "\n".join(tried) +
                      "\nBuild it (make release) or set SBN_LIBRARY=/path/to/libsyncbn.so")


lib = load()
