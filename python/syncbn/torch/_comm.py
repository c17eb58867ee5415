"""libsyncbn communicators for the torch module: over torch.distributed, or one local rank.

``GroupComm`` is a callbacks communicator (``sbn_comm_callbacks_create``) over
the module's process group (gloo on CPU) with two callbacks: ``allreduce_int64``,
``torch.distributed.all_reduce`` (SUM or MAX) on an int64 tensor that shares the
library's buffer, and ``allgather`` (``all_gather`` on uint8), used only when the
ranks disagree. The C layer checks every collective with a header (operation,
size, tag with C and dtype, call number, the caller's step), folded into one MAX
of 64 words with their complements, so ranks making different calls get
``CommMismatchError`` instead of waiting; it merges the layer's exact
accumulators with that MAX (their tops ride in it) and one SUM of 11 words per
accumulator (comm.h). Once the exchanges repeat with a period (forward, backward;
two steps show it), the C layer guesses the header and the tops from the exchange
one period back and sends only the SUM, with the proof of the guess
folded in (src/comm/comm_spec.h), falling back to the MAX and the SUM on every rank
when the guess fails: in training, a forward or a backward is one all_reduce of
O(C) bytes whatever the world size, and always the bits of the rank-order merge.
An exception raised by torch inside a callback is kept and chained to the
SyncBNError the C call then returns.
``LocalComm`` is a world of one rank (threads backend): no collective leaves the
process. Each object owns its C handle and the ctypes callbacks the handle calls.
"""
import ctypes

import torch
import torch.distributed as dist

from .. import _errors
from .._lib import (ALLGATHER_FN, ALLREDUCE_FN, ALLREDUCE_INT64_FN, BARRIER_FN, DESTROY_FN,
                    INT_MAX, CommCallbacks, lib)


class _Comm:
    handle = None
    group = None
    pending = None  # an exception raised inside a callback, for the next raise
    step = None     # the step last declared to the handle (the backward repeats the forward's)

    def set_step(self, step):
        if step != self.step:
            _errors.check(lib.sbn_comm_set_step(self.handle, int(step)), "sbn_comm_set_step")
            self.step = step

    def fail(self, status):
        """Announces a failure of this rank at the next collective (peers get PeerFailedError)."""
        lib.sbn_comm_fail(self.handle, int(status))
        self.pending = None

    def error(self, status, context):
        """The exception for a failed layer call, chained to any error torch raised under it."""
        err = _errors.error_for(status, context)
        cause, self.pending = self.pending, None
        if cause is not None:
            err.__cause__ = cause
        return err

    def traffic(self):
        """(bytes sent, bytes received) through this handle's collectives (sbn_comm_traffic)."""
        sent, received = ctypes.c_uint64(), ctypes.c_uint64()
        lib.sbn_comm_traffic(self.handle, ctypes.byref(sent), ctypes.byref(received))
        return sent.value, received.value

    def close(self):
        if self.handle is not None and lib is not None:
            lib.sbn_comm_destroy(self.handle)
        self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


class LocalComm(_Comm):
    """A world of one rank (training outside any process group, eval)."""
    rank, size = 0, 1

    def __init__(self):
        handle = ctypes.c_void_p()
        _errors.check(lib.sbn_comm_threads_create(1, 0.0, ctypes.byref(handle)),
                      "sbn_comm_threads_create")
        self.handle = handle


class GroupComm(_Comm):
    """A communicator over a torch.distributed process group (None = the default group)."""

    def __init__(self, group):
        self.group = group
        self.rank = dist.get_rank(group)
        self.size = dist.get_world_size(group)
        # the ctypes function objects must live as long as the C handle may call them
        self._allgather_fn = ALLGATHER_FN(self._allgather)
        self._allreduce_int64_fn = ALLREDUCE_INT64_FN(self._allreduce_int64)
        self._ops = (dist.ReduceOp.SUM, dist.ReduceOp.MAX)
        self._callbacks = CommCallbacks(self._allgather_fn, BARRIER_FN(), DESTROY_FN(),
                                        ALLREDUCE_FN(), self._allreduce_int64_fn)
        handle = ctypes.c_void_p()
        _errors.check(lib.sbn_comm_callbacks_create(self.rank, self.size,
                                                    ctypes.byref(self._callbacks), None,
                                                    ctypes.byref(handle)),
                      "sbn_comm_callbacks_create")
        self.handle = handle

    def _allgather(self, user, send, nbytes, recv):
        try:
            src = torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(send), dtype=torch.uint8)
            dst = torch.frombuffer((ctypes.c_uint8 * (nbytes * self.size)).from_address(recv),
                                   dtype=torch.uint8).view(self.size, nbytes)
            dist.all_gather(list(dst.unbind(0)), src, group=self.group)
            return 0
        except BaseException as e:  # never let an exception cross the C frames
            self.pending = e
            return 1

    def _allreduce_int64(self, user, data, count, op):
        try:
            buf = (ctypes.c_int64 * count).from_address(data)
            dist.all_reduce(torch.frombuffer(buf, dtype=torch.int64),
                            op=self._ops[op == INT_MAX], group=self.group)
            return 0
        except BaseException as e:  # never let an exception cross the C frames
            self.pending = e
            return 1
