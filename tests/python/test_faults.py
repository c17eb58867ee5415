"""Faults in a gloo world become errors on every rank, never a hang; eval makes no collective.

- eval: rank 0 runs eval forward and backward while rank 1 has already returned;
  a collective would wait for rank 1 until the gloo timeout and fail the test.
- mismatch: an extra forward on one rank (met by the other rank's backward) and a
  different channel count per rank raise CommMismatchError on both ranks.
- bad input on one rank (1-D, wrong channel count, mismatched dtypes) raises a
  clear error there and PeerFailedError on the peer, running stats unchanged on both.
"""
import pytest

torch = pytest.importorskip("torch")

import faults  # noqa: E402
from world import run_world  # noqa: E402


def test_eval_makes_no_collective():
    res = run_world(faults.eval_rank, 2, timeout=90, gloo_timeout=15)[0]
    assert res["y"] < 1e-12 and res["batch_stats_y"] < 1e-12, res
    assert res["nbt"] == 0


def test_mismatched_calls_raise_on_every_rank():
    r0, r1 = run_world(faults.mismatch_rank, 2, timeout=150, gloo_timeout=20)
    for key in ("extra_forward", "channels"):
        for r, res in enumerate((r0, r1)):
            assert res[key][0] == "CommMismatchError", (key, r, res[key])
    # the forward's merge of 3C + 2 accumulators met the backward's merge of 2C + 1 (C = 3)
    assert "allreduce_merge (count 11" in r0["extra_forward"][1] and \
        "allreduce_merge (count 7" in r0["extra_forward"][1], r0["extra_forward"]
    expect = {"one_d": ("BadInputError", "2D"), "wrong_channels": ("SyncBNError", "[3]"),
              "mismatched_dtype": ("BadInputError", "mismatched dtypes")}
    for key, (cls, words) in expect.items():
        assert r0[key][0] == cls and words in r0[key][1], (key, r0[key])
        assert r1[key][0] == "PeerFailedError", (key, r1[key])
        assert r0[key][2] and r1[key][2], key + ": running stats changed"
    assert r0["after"][0] == "ok" and r1["after"][0] == "ok", (r0["after"], r1["after"])


def test_one_sample_in_the_whole_world_raises_on_every_rank():
    """Issue 25: a world holding a single sample per channel trained silently (running_mean
    moved, num_batches_tracked counted); torch.nn.SyncBatchNorm's forward raises ValueError
    "Expected more than 1 value per channel when training, got input size 1"; here every rank
    raises it (the count is global), none waits, and the module is left as it was."""
    r0, r1 = run_world(faults.single_sample_rank, 2, timeout=90, gloo_timeout=15)
    want = "Expected more than 1 value per channel when training, got input size 1"
    for key in ("n_c", "n_c_h_w"):
        for r, res in enumerate((r0, r1)):
            cls, msg, is_value_error, unchanged = res[key]
            assert is_value_error and want in msg, (key, r, cls, msg)
            assert unchanged, "%s rank %d: running stats changed" % (key, r)
    assert r0["one_each"][0] == "ok" and r1["one_each"][0] == "ok", (r0["one_each"], r1["one_each"])
