"""The bytes a SyncBN step moves through torch.distributed do not grow with the world.

For W = 2, 3, 4 gloo processes, every rank's forward+backward of a
SyncBatchNorm(C) hands torch.distributed the same number of bytes, in one
all_reduce per exchange once two steps have shown the exchanges' period (the
speculative merge, src/comm/comm_spec.h: a SUM of 11 words per accumulator
aligned to the agreed tops of the previous step, a count per three accumulators of
the ranks reaching them, and 3 words proving the guess; 3C + 2 accumulators
forward, 2C + 1 backward, the last of each block counting the world's units)
and no all_gather; the bytes equal what the C handle counts and the formula of
comm.h. Before issue 27 the merge allgathered every rank's accumulators: the
received bytes grew as W x (5C + 1) x 56.
"""
import pytest

torch = pytest.importorskip("torch")

import traffic  # noqa: E402
from world import run_world  # noqa: E402


def _merge_bytes(n):
    """Bytes one rank hands to all_reduce for a merge of n accumulators that repeats the
    merge of the previous step (comm.h): one SUM of 11 n + ceil(n / 3) + 3 int64."""
    return 8 * (11 * n + (n + 2) // 3 + 3)


@pytest.mark.parametrize("channels", [4, 64])
def test_bytes_per_rank_are_flat_in_the_world_size(channels):
    want = _merge_bytes(3 * channels + 2) + _merge_bytes(2 * channels + 1)
    calls = ["all_reduce"] * 2  # one per exchange, whatever C
    for world in (2, 3, 4):
        results = run_world(traffic.traffic_rank, world, channels, 3, timeout=180)
        for rank, res in enumerate(results):
            where = "W %d rank %d: %s" % (world, rank, res)
            assert res["calls"] == calls, where
            assert res["sent"] == want and res["received"] == want, where
            assert res["c_sent"] == want and res["c_received"] == want, where
