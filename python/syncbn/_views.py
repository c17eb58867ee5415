"""Zero-copy views of numpy arrays and torch CPU tensors as ``sbn_tensor``.

``view(a, name)`` reads the data pointer, dtype, shape and strides (in elements)
of a numpy array or a torch tensor without copying, and refuses, with a
``BadInputError`` naming the argument, what the library cannot read: a tensor
on another device (CUDA, meta), a sparse, nested or quantized tensor, an element
type other than f32/f64/f16/bf16/i32/i64, a rank above 8, or strides that are not
a whole number of elements. ``empty(like, shape, dtype)`` allocates an output of
the same kind (numpy or torch) as an input. The caller keeps the objects alive
for as long as the C call runs; the views hold bare pointers.

A torch tensor may carry the negative or the conjugate bit (``z.conj().imag``,
``torch._neg_view``): torch negates (conjugates) its memory lazily, on read by
its own ops, so the bytes at ``data_ptr()`` are not its values. An input is
resolved first (``resolve_conj()``/``resolve_neg()``, a copy the view keeps
alive); an output the library writes in place (``writable``) is refused, since
the library would store un-negated values into it.
"""
import ctypes
import struct

import numpy as np

from . import _errors
from ._lib import MAX_RANK, Tensor

try:
    import torch as _torch
except ImportError:  # the native ops work on numpy alone
    _torch = None

F32, F64, F16, BF16, I32, I64 = 0, 1, 2, 3, 4, 5
DTYPE_NAMES = {F32: "f32", F64: "f64", F16: "f16", BF16: "bf16", I32: "i32", I64: "i64"}
FLOAT_CODES = (F32, F64, F16, BF16)

_NUMPY_CODES = {np.dtype(np.float32): F32, np.dtype(np.float64): F64,
                np.dtype(np.float16): F16, np.dtype(np.int32): I32, np.dtype(np.int64): I64}
_NUMPY_TYPES = {v: k for k, v in _NUMPY_CODES.items()}
if _torch is not None:
    _TORCH_CODES = {_torch.float32: F32, _torch.float64: F64, _torch.float16: F16,
                    _torch.bfloat16: BF16, _torch.int32: I32, _torch.int64: I64}
    _TORCH_TYPES = {v: k for k, v in _TORCH_CODES.items()}
else:
    _TORCH_CODES, _TORCH_TYPES = {}, {}


def is_torch(a):
    return _torch is not None and isinstance(a, _torch.Tensor)


def dtype_code(a):
    """The sbn_dtype of an array or tensor; BadInputError when it has none."""
    if is_torch(a):
        code = _TORCH_CODES.get(a.dtype)
    else:
        code = _NUMPY_CODES.get(a.dtype)
    if code is None:
        raise _errors.bad_input(_errors.ERR_BAD_DTYPE, "has dtype %s; syncbn takes float32, "
                                "float64, float16, bfloat16 (and int32/int64 counts)" % a.dtype)
    return code


def _check_torch(t, name):
    if t.device.type != "cpu":
        raise _errors.bad_input(_errors.ERR_BAD_VALUE, "%s is on device %s; syncbn computes on "
                                "CPU tensors only (move it with .cpu(), or use torch's own ops "
                                "for %s tensors)" % (name, t.device, t.device.type))
    if t.layout != _torch.strided:
        raise _errors.bad_input(_errors.ERR_BAD_VALUE, "%s has layout %s; syncbn takes strided "
                                "(dense) tensors" % (name, t.layout))
    if t.is_quantized:
        raise _errors.bad_input(_errors.ERR_BAD_DTYPE, "%s is quantized (%s)" % (name, t.dtype))
    if getattr(t, "is_nested", False):
        raise _errors.bad_input(_errors.ERR_BAD_VALUE, "%s is a nested tensor; syncbn takes "
                                "strided (dense) tensors" % name)


def lazy_bits(t):
    """The lazy bits set on torch tensor t ("negative", "conjugate"): [] when its memory holds
    its values (torch before 1.10 has neither bit)."""
    bits = []
    if getattr(t, "is_neg", None) is not None and t.is_neg():
        bits.append("negative")
    if getattr(t, "is_conj", None) is not None and t.is_conj():
        bits.append("conjugate")
    return bits


def resolved(t, name, writable=False):
    """Torch tensor t with its memory holding its values: t itself, or for an input with the
    negative or conjugate bit a resolved copy; an output (writable) with a bit is refused."""
    bits = lazy_bits(t)
    if not bits:
        return t
    if writable:
        raise _errors.bad_input(_errors.ERR_BAD_VALUE, "%s (shape %s, %s) has torch's %s bit set "
                                "(a lazily negated view such as z.conj().imag): its memory holds "
                                "the values un-negated and syncbn writes it in place, so the "
                                "results would be stored with the wrong sign; pass a tensor "
                                "without the bit (t.resolve_neg() is a copy of its values)"
                                % (name, tuple(t.shape), t.dtype, " and ".join(bits)))
    return t.resolve_conj().resolve_neg()


_DIMS = ctypes.c_int64 * MAX_RANK
if _torch is not None:
    _STRIDED = _torch.strided
    _HAS_LAZY_BITS = hasattr(_torch.Tensor, "is_neg") and hasattr(_torch.Tensor, "is_conj")
    _HAS_NESTED = hasattr(_torch.Tensor, "is_nested")


# sbn_tensor's bytes (data, dtype, rank, shape[8], strides[8]) packed in one call: building
# the ctypes Structure from them is a third of the cost of filling its fields and arrays
_PACKER = struct.Struct("=Qii%dq%dq" % (MAX_RANK, MAX_RANK))
_PACK = _PACKER.pack if _PACKER.size == ctypes.sizeof(Tensor) and \
    Tensor.shape.offset == 16 and Tensor.strides.offset == 16 + 8 * MAX_RANK else None
_FROM_BYTES = Tensor.from_buffer_copy
_PAD = [(0,) * (MAX_RANK - r) for r in range(MAX_RANK + 1)]


def _fast_torch_view(a):
    """The view of a plain dense CPU tensor of a library dtype without lazy bits, or None for
    anything else (which view()'s checks then refuse or resolve). A layer call makes a dozen
    views, so the common case skips the general path's separate checks and loops."""
    code = _TORCH_CODES.get(a.dtype)
    if code is None or not a.is_cpu or a.layout is not _STRIDED or (_HAS_NESTED and a.is_nested) \
            or not _HAS_LAZY_BITS or a.is_neg() or a.is_conj():
        return None
    shape = a.shape
    rank = len(shape)
    if rank > MAX_RANK:
        return None
    if _PACK is not None:
        pad = _PAD[rank]
        return _FROM_BYTES(_PACK(a.data_ptr(), code, rank, *shape, *pad, *a.stride(), *pad))
    return Tensor(a.data_ptr() or None, code, rank, _DIMS(*shape), _DIMS(*a.stride()))


def view(a, name, writable=False):
    """An sbn_tensor over `a` (numpy array or torch CPU tensor); None stays None."""
    if a is None:
        return None
    if _torch is not None and isinstance(a, _torch.Tensor):
        t = _fast_torch_view(a)
        if t is not None:
            return t
    keep = None
    if is_torch(a):
        _check_torch(a, name)
        try:
            code = dtype_code(a)
        except _errors.BadInputError as e:
            raise _errors.bad_input(e.status, "%s %s" % (name, e.detail)) from None
        a = keep = resolved(a, name, writable)
        shape, strides, ptr = tuple(a.shape), tuple(a.stride()), a.data_ptr()
    elif isinstance(a, np.ndarray):
        try:
            code = dtype_code(a)
        except _errors.BadInputError as e:
            raise _errors.bad_input(e.status, "%s %s" % (name, e.detail)) from None
        if writable and not a.flags.writeable:
            raise _errors.bad_input(_errors.ERR_BAD_VALUE, "%s is a read-only numpy array" % name)
        size = a.itemsize
        if any(s % size for s in a.strides):
            raise _errors.bad_input(_errors.ERR_BAD_VALUE, "%s has byte strides %s, not a whole "
                                    "number of %d-byte elements" % (name, a.strides, size))
        shape, strides, ptr = a.shape, tuple(s // size for s in a.strides), a.ctypes.data
    else:
        raise _errors.bad_input(_errors.ERR_BAD_VALUE, "%s is a %s; expected a numpy array or a "
                                "torch tensor" % (name, type(a).__name__))
    if len(shape) > MAX_RANK:
        raise _errors.bad_input(_errors.ERR_BAD_RANK, "%s has rank %d; syncbn takes at most %d "
                                "dims" % (name, len(shape), MAX_RANK))
    t = Tensor()
    t.keep = keep  # a resolved copy lives as long as the view (ctypes.byref holds the view)
    t.data = ptr or None
    t.dtype = code
    t.rank = len(shape)
    for d, (n, s) in enumerate(zip(shape, strides)):
        t.shape[d] = n
        t.strides[d] = s
    return t


def ref(t):
    """ctypes pointer argument for an optional view."""
    return ctypes.byref(t) if t is not None else None


def empty(like, shape, code, channels_last_of=None):
    """A new array/tensor of the kind of `like`; channels_last_of copies that tensor's layout."""
    if is_torch(like):
        dtype = _TORCH_TYPES[code]
        if channels_last_of is not None:
            return _torch.empty_like(channels_last_of, dtype=dtype)
        return _torch.empty(shape, dtype=dtype)
    if code == BF16:
        raise _errors.bad_input(_errors.ERR_BAD_DTYPE, "numpy has no bfloat16; use torch tensors")
    if channels_last_of is not None:
        return np.empty_like(channels_last_of, dtype=_NUMPY_TYPES[code])
    return np.empty(shape, dtype=_NUMPY_TYPES[code])


def stats_code(x_code):
    """The dtype of per-channel statistics for an input dtype (f32 for f16/bf16, as torch)."""
    return F32 if x_code in (F16, BF16) else x_code
