"""syncbn's SyncBatchNorm is a torch.nn.SyncBatchNorm, and DDP takes it in a CPU model.

``isinstance(m, torch.nn.SyncBatchNorm)`` holds for syncbn's module, so the tools
that look for SyncBN layers find it. In a 2-rank gloo world, without ``patch()``:
DistributedDataParallel wraps a CPU model holding syncbn's SyncBatchNorm (torch
refuses every nn.SyncBatchNorm in a CPU model; syncbn's import spares its own),
its logging reports ``has_sync_bn``, and a training step gives the running mean of
the whole batch on every rank; a CPU model holding torch's own SyncBatchNorm is
still refused with torch's words.
"""
import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402
import torch.nn as nn  # noqa: E402

import syncbn.torch as st  # noqa: E402
from world import run_world  # noqa: E402


def test_syncbn_module_is_a_torch_syncbatchnorm():
    m = st.SyncBatchNorm(3)
    assert isinstance(m, nn.SyncBatchNorm)
    assert isinstance(m, nn.modules.batchnorm._BatchNorm)
    assert st.SyncBatchNorm.convert_sync_batchnorm is not nn.SyncBatchNorm.convert_sync_batchnorm


def ddp_rank(rank, world):
    from torch.nn.parallel import DistributedDataParallel as DDP
    out = {}
    theirs = nn.Sequential(nn.Linear(4, 3), nn.SyncBatchNorm(3))
    try:
        DDP(theirs)
        out["theirs"] = "accepted"
    except ValueError as e:
        out["theirs"] = str(e)
    model = DDP(nn.Sequential(nn.Linear(4, 3), st.SyncBatchNorm(3)))
    logging = model._get_ddp_logging_data() if hasattr(model, "_get_ddp_logging_data") else {}
    out["has_sync_bn"] = logging.get("has_sync_bn")
    g = torch.Generator().manual_seed(7)
    xs = torch.randn(world * 5, 4, generator=g)
    x = xs[rank * 5:(rank + 1) * 5]
    model(x).sum().backward()
    with torch.no_grad():
        h = model.module[0](xs)  # the Linear's output on the whole batch
    out["running_mean"] = model.module[1].running_mean.numpy().copy()
    out["want"] = (0.1 * h.mean(0)).numpy()
    return out


def test_ddp_takes_syncbn_module_in_a_cpu_model():
    for rank, res in enumerate(run_world(ddp_rank, 2, timeout=180)):
        assert "only work with GPU modules" in res["theirs"], (rank, res["theirs"])
        if res["has_sync_bn"] is not None:
            assert res["has_sync_bn"] == 1, (rank, res)
        np.testing.assert_allclose(res["running_mean"], res["want"], rtol=1e-5, atol=1e-6)
