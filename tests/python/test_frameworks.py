"""The frameworks that turn SyncBN on, on CPU through syncbn.

Frameworks add SyncBN in two ways: they call torch's converter and train torch's
``nn.SyncBatchNorm`` (torchvision's scripts, Lightning's ``sync_batchnorm=True``),
or they subclass ``nn.SyncBatchNorm`` with a forward that calls torch's and then
does more (timm's SyncBatchNormAct: dropout and an activation after the batch
norm), built by a converter of their own. Under ``patch()`` both train on CPU:

- a subclass of nn.SyncBatchNorm whose forward is ``super().forward`` plus an
  activation (the timm layer's shape, written here) trains in a 2-rank gloo world
  as one process on the whole batch: outputs, input gradients and running stats;
- syncbn's converter, which like torch's builds plain SyncBatchNorm layers, warns
  when it replaces such a layer (its activation would no longer run) and names
  the layer; torch's plain classes and syncbn's convert without a warning;
- where timm is installed (the device host; not Debian), its BatchNormAct2d
  converted by ``timm.layers.convert_sync_batchnorm`` trains at W = 2 as the
  whole batch; where Lightning is installed, a ``Trainer(strategy="ddp",
  devices=2, sync_batchnorm=True)`` run under torchrun gives every rank the
  running mean of the whole batch (tests/python/lightning_ddp.py). Each skips,
  saying so, where its framework is absent (CI has neither).
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import syncbn.torch as st  # noqa: E402
from world import free_port, run_world  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


class NormThenAct(nn.SyncBatchNorm):
    """A framework's norm + activation layer: torch's SyncBatchNorm forward, then ReLU."""

    def forward(self, x):
        return torch.relu(super().forward(x))


def _whole_batch(world, per_rank):
    """The whole batch (world * per_rank samples of 4 channels, 5x3, float64; the same on
    every rank) and the weights of its loss, sum(w * y)."""
    g = torch.Generator().manual_seed(5)
    xs = torch.randn(world * per_rank, 4, 5, 3, generator=g, dtype=torch.float64) * 2 + 1
    w = torch.randn(xs.shape, generator=g, dtype=torch.float64)
    return xs, w


def _train_rank(make_layer, rank, world, per_rank, patched):
    """One training step of make_layer() on this rank's share of the whole batch, beside
    torch's BatchNorm2d + ReLU on all of it in this process: (got, want) pairs of the
    output, the input gradient (this rank's rows) and the running stats."""
    if patched:
        st.patch()
    try:
        xs, w = _whole_batch(world, per_rank)
        lo, hi = rank * per_rank, (rank + 1) * per_rank
        layer = make_layer().double()
        ref = nn.BatchNorm2d(4).double()
        with torch.no_grad():
            for m in (layer, ref):
                m.weight.copy_(torch.linspace(0.5, 1.5, 4))
                m.bias.copy_(torch.linspace(-1, 1, 4))
        x = xs[lo:hi].clone().requires_grad_(True)
        y = layer(x)
        (y * w[lo:hi]).sum().backward()
        xr = xs.clone().requires_grad_(True)
        yr = torch.relu(ref(xr))
        (yr * w).sum().backward()
        return {"y": (y.detach().numpy(), yr.detach()[lo:hi].numpy()),
                "dx": (x.grad.numpy(), xr.grad[lo:hi].numpy()),
                "mean": (layer.running_mean.numpy(), ref.running_mean.numpy()),
                "var": (layer.running_var.numpy(), ref.running_var.numpy())}
    finally:
        if patched:
            st.unpatch()


def _check_ranks(results):
    for rank, res in enumerate(results):
        for name, (got, want) in res.items():
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10,
                                       err_msg="rank %d: %s" % (rank, name))


def norm_then_act_rank(rank, world):
    return _train_rank(lambda: NormThenAct(4), rank, world, 3, True)


def test_subclass_calling_torch_forward_trains_as_the_whole_batch_under_patch():
    _check_ranks(run_world(norm_then_act_rank, 2, timeout=180))


def test_convert_warns_when_it_drops_a_layers_own_forward():
    class NormAct(nn.BatchNorm2d):  # a framework's BatchNorm2d + activation
        def __init__(self, n):
            super().__init__(n)
            self.act = nn.ReLU()

        def forward(self, x):
            return self.act(super().forward(x))

    model = nn.Sequential(nn.Conv2d(3, 4, 1), NormAct(4), nn.BatchNorm1d(4))
    with pytest.warns(UserWarning, match=r"1 is a .*NormAct, whose class has a forward of its "
                      r"own.*\['act'\].*timm\.layers\.convert_sync_batchnorm"):
        st.convert_sync_batchnorm(model)
    st.patch()
    try:
        with pytest.warns(UserWarning, match="has a forward of its own"):
            nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(NormAct(4)))
        with warnings.catch_warnings():  # torch's own classes (and patched torch's) convert quietly
            warnings.simplefilter("error")
            plain = nn.Sequential(nn.BatchNorm1d(4), nn.BatchNorm2d(4), nn.BatchNorm3d(4),
                                  nn.SyncBatchNorm(4))
            nn.SyncBatchNorm.convert_sync_batchnorm(plain)
            st.convert_sync_batchnorm(plain)
            st.convert_sync_batchnorm(nn.Sequential(st.SyncBatchNorm(4)))
    finally:
        st.unpatch()


def timm_rank(rank, world):
    from timm.layers import BatchNormAct2d, convert_sync_batchnorm

    def make():
        layer = convert_sync_batchnorm(nn.Sequential(BatchNormAct2d(4)))[0]
        assert isinstance(layer, nn.SyncBatchNorm), type(layer)
        return layer
    return _train_rank(make, rank, world, 3, True)


def test_timm_convert_sync_batchnorm_trains_as_the_whole_batch_under_patch():
    pytest.importorskip("timm", reason="timm is not installed here (it is on the device host)")
    _check_ranks(run_world(timm_rank, 2, timeout=180))


def test_lightning_ddp_sync_batchnorm_under_torchrun(tmp_path):
    pytest.importorskip("lightning", reason="Lightning is not installed here (it is on the "
                        "device host)")
    env = dict(os.environ, LIGHTNING_OUT=str(tmp_path), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
           os.path.join(HERE, "lightning_ddp.py")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    for rank in range(2):
        got = np.load(os.path.join(str(tmp_path), "rank%d.npz" % rank))
        np.testing.assert_allclose(got["running_mean"], got["want_mean"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["running_var"], got["want_var"], rtol=1e-5, atol=1e-6)
        assert got["has_syncbn"], "rank %d: the layer was no SyncBatchNorm during the step" % rank
