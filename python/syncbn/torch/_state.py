"""The per-module state syncbn keeps beside a batch norm module's parameters and buffers.

A module (ours, or torch's SyncBatchNorm once patched) holds one ``SyncState``
in its ``__dict__``: its communicators (one per process group it synced over, and
one local rank), the number of synchronised training forwards it made (the step
every collective declares, so a rank that runs an extra forward is caught), and
the rank of the inputs it has seen and the class it replaced (for
``revert_sync_batchnorm``). It is not
part of the state_dict; copying or pickling a module gives a fresh state that
keeps only the input rank and the replaced class, since C handles cannot be copied.
"""
from ._comm import GroupComm, LocalComm

ATTR = "_syncbn_state"


class SyncState:
    def __init__(self, input_dim=None, replaced=None):
        self.input_dim = input_dim
        self.replaced = replaced  # the batch norm class convert_sync_batchnorm swapped out
        self.steps = 0
        self.configs = {}  # sbn_syncbn_config per (eps, momentum, training, reproducible)
        self._local = None
        self._group_comm = None
        self._group_key = None

    def local(self):
        if self._local is None:
            self._local = LocalComm()
        return self._local

    def group(self, group):
        """The communicator over `group`, created on first use (and again when it changes)."""
        if self._group_comm is None or self._group_key is not group:
            self._group_comm = GroupComm(group)
            self._group_key = group
        return self._group_comm

    def __deepcopy__(self, memo):
        return SyncState(self.input_dim, self.replaced)

    def __reduce__(self):
        # a plain dict, so that a pickled model (torch's patched SyncBatchNorm included) loads
        # where syncbn is not installed; state_of() turns it back into a SyncState
        return (dict, ({"input_dim": self.input_dim, "replaced": self.replaced},))


def _restored(module, st):
    if isinstance(st, SyncState):
        return st
    saved = st if isinstance(st, dict) else {}
    st = SyncState(saved.get("input_dim"), saved.get("replaced"))
    module.__dict__[ATTR] = st
    return st


def peek(module):
    """The module's SyncState, or None (without creating one)."""
    st = module.__dict__.get(ATTR)
    return None if st is None else _restored(module, st)


def state_of(module):
    """The module's SyncState, created on first use."""
    st = module.__dict__.get(ATTR)
    if st is None:
        st = SyncState()
        module.__dict__[ATTR] = st
    return _restored(module, st)
