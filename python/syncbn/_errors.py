"""The exceptions syncbn raises, and the one place that turns a C status into one.

Every failure of a C call becomes a ``SyncBNError`` (a ``RuntimeError``) carrying
the status value, its name (``"SBN_ERR_BAD_SHAPE"``) and the library's sentence
from ``sbn_last_error()``. The communication failures have subclasses, so a
training script can tell a mismatch between ranks (``CommMismatchError``) from a
timeout or a failed peer. Arguments refused by the Python side before any C call
raise ``BadInputError``, which is both a ``SyncBNError`` and a ``ValueError`` (the
class PyTorch raises for a bad input to its batch norm).
"""
from ._lib import lib

# The status values of include/syncbn/syncbn.h that the Python side names itself.
OK = 0
NO_SAMPLES = 1
SINGLE_SAMPLE = 2
NON_FINITE_STATS = 3
ERR_NULL_ARGUMENT = -1
ERR_BAD_DTYPE = -2
ERR_BAD_RANK = -3
ERR_BAD_SHAPE = -4
ERR_BAD_VALUE = -5
ERR_COMM = -11
ERR_COMM_MISMATCH = -12
ERR_TIMEOUT = -13
ERR_PEER_FAILED = -14


def status_name(status):
    """``"SBN_ERR_BAD_SHAPE"`` for -4, as ``sbn_status_name``."""
    return lib.sbn_status_name(int(status)).decode()


class SyncBNError(RuntimeError):
    """A failed syncbn call: ``status`` (int), ``status_name`` and ``detail`` (the sentence)."""

    def __init__(self, status, detail, context=""):
        self.status = int(status)
        self.status_name = status_name(status)
        self.detail = detail
        text = "%s: %s" % (self.status_name, detail or lib.sbn_status_str(self.status).decode())
        super().__init__("%s: %s" % (context, text) if context else text)


class CommError(SyncBNError):
    """The transport (torch.distributed, MPI) failed under a collective."""


class CommMismatchError(CommError):
    """The ranks made different collective calls (or disagreed on their arguments)."""


class CommTimeoutError(CommError):
    """A collective waited longer than its timeout for the other ranks."""


class PeerFailedError(CommError):
    """Another rank failed and announced it at this collective."""


class BadInputError(SyncBNError, ValueError):
    """An argument refused before reaching the library (device, dtype, rank, type)."""


_CLASSES = {ERR_COMM: CommError, ERR_COMM_MISMATCH: CommMismatchError,
            ERR_TIMEOUT: CommTimeoutError, ERR_PEER_FAILED: PeerFailedError}


def error_for(status, context="", detail=None):
    """The exception for a failed status, with the calling thread's last error sentence."""
    if detail is None:
        detail = lib.sbn_last_error().decode(errors="replace")
    return _CLASSES.get(int(status), SyncBNError)(status, detail, context)


def check(status, context=""):
    """Returns a success status (>= 0) unchanged; raises the matching SyncBNError otherwise."""
    if status < 0:
        raise error_for(status, context)
    return status


def bad_input(status, message):
    """A BadInputError for a Python-side check, with the status the C side would give."""
    return BadInputError(status, message)
