"""The bytes a SyncBN step moves through torch.distributed do not grow with the world.

For W = 2, 3, 4 gloo processes, every rank's forward+backward of a
SyncBatchNorm(C) hands torch.distributed the same number of bytes, in two
all_reduce calls per exchange (a MAX of 64 words with the accumulators' tops
riding in it, a SUM of 11 words per accumulator: 3C + 2 forward, 2C + 1 backward,
the last of each block counting the world's units)
and no all_gather; the bytes equal what the C handle counts and the formula of
comm.h. Before issue 27 the merge allgathered every rank's accumulators: the
received bytes grew as W x (5C + 1) x 56.
"""
import pytest

torch = pytest.importorskip("torch")

import traffic  # noqa: E402
from world import run_world  # noqa: E402


def _merge_bytes(n):
    """Bytes one rank hands to all_reduce for a merge of n accumulators (comm.h)."""
    return 512 + 88 * n + (8 * (n - 51) if n > 51 else 0)


@pytest.mark.parametrize("channels", [4, 64])
def test_bytes_per_rank_are_flat_in_the_world_size(channels):
    want = _merge_bytes(3 * channels + 2) + _merge_bytes(2 * channels + 1)
    calls = ["all_reduce"] * (4 if channels <= 16 else 6)
    for world in (2, 3, 4):
        results = run_world(traffic.traffic_rank, world, channels, 3, timeout=180)
        for rank, res in enumerate(results):
            where = "W %d rank %d: %s" % (world, rank, res)
            assert res["calls"] == calls, where
            assert res["sent"] == want and res["received"] == want, where
            assert res["c_sent"] == want and res["c_received"] == want, where
