"""The tools PyTorch users run on models with SyncBN, and torch's wording and ranks.

- torch.fx.symbolic_trace keeps syncbn's SyncBatchNorm as one call_module node
  (a leaf, as torch's own modules), and the traced model computes what eager does;
- in eval, torch.jit.trace and torch.onnx.export record plain batch norm (ours
  and the patched torch.nn.SyncBatchNorm), and the traced model matches eager;
- a model of patched torch.nn.SyncBatchNorm pickled after a forward loads in a
  process where syncbn cannot be imported;
- bad-input messages read as torch's after the status name;
- inputs of 9 and 10 dims (torch accepts any rank >= 2) equal torch's batch norm
  on the same values, forward and backward, in float64;
- torchvision's resnet18 converted by torch.nn.SyncBatchNorm.convert_sync_batchnorm
  under patch() (the --sync-bn path of torchvision's reference scripts) equals the
  BatchNorm2d model outside a process group, and reverts.
"""
import io
import pickle
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = nn.functional

import syncbn  # noqa: E402
import syncbn.torch as st  # noqa: E402


def _model(bn):
    torch.manual_seed(11)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), bn(4), nn.ReLU())
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
        model[1].weight.uniform_(0.5, 1.5)
        model[1].bias.uniform_(-1, 1)
    return model


def test_fx_traces_syncbatchnorm_as_a_leaf():
    model = _model(st.SyncBatchNorm)
    gm = torch.fx.symbolic_trace(model)
    nodes = [(n.op, n.target) for n in gm.graph.nodes]
    assert ("call_module", "1") in nodes, nodes
    assert isinstance(gm.get_submodule("1"), st.SyncBatchNorm)
    x = torch.randn(5, 3, 6, 6)
    for train in (True, False):
        model.train(train), gm.train(train)
        assert torch.allclose(gm(x), model(x), atol=1e-6), train


@pytest.mark.parametrize("cls", ["ours", "patched"])
def test_eval_jit_trace_and_onnx_export_record_batch_norm(cls):
    if cls == "patched":
        st.patch()
    try:
        model = _model(st.SyncBatchNorm if cls == "ours" else nn.SyncBatchNorm).eval()
        x = torch.randn(2, 3, 6, 6)
        traced = torch.jit.trace(model, x)
        assert "aten::batch_norm" in str(traced.inlined_graph), traced.inlined_graph
        x2 = torch.randn(3, 3, 6, 6)
        want = F.batch_norm(model[0](x2), model[1].running_mean, model[1].running_var,
                            model[1].weight, model[1].bias, False, 0.0, 1e-5).relu()
        assert torch.allclose(traced(x2), want, atol=1e-5)
        assert torch.allclose(model(x2), want, atol=1e-5)
        buf = io.BytesIO()
        torch.onnx.export(model[1:], model[0](x), buf)  # a conv before it would be fused in
        assert b"BatchNormalization" in buf.getvalue()
    finally:
        st.unpatch()


def test_pickled_patched_model_loads_without_syncbn(tmp_path):
    st.patch()
    try:
        model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.SyncBatchNorm(4))
        model(torch.randn(4, 3, 2, 2))  # a patched forward: the module now has syncbn's state
        converted = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm2d(4)))
    finally:
        st.unpatch()
    path = tmp_path / "model.pt"
    torch.save({"model": model, "converted": converted}, str(path))
    assert b"syncbn.torch" not in path.read_bytes()
    code = ("import sys; sys.modules['syncbn'] = None\n"  # import syncbn raises ImportError
            "import torch\n"
            "d = torch.load(%r)\n"
            "print(type(d['model'][1]).__name__, float(d['model'][1].num_batches_tracked))\n"
            % str(path))
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    assert out.returncode == 0 and "SyncBatchNorm 1.0" in out.stdout, out.stdout
    # with syncbn present, the loaded state still serves revert_sync_batchnorm
    loaded = torch.load(str(path))
    assert type(st.revert_sync_batchnorm(loaded["converted"])[0]) is nn.BatchNorm2d


def test_messages_keep_torchs_wording():
    m = st.SyncBatchNorm(3)
    with pytest.raises(ValueError) as ours:
        m(torch.randn(3))
    assert str(ours.value).endswith(": expected at least 2D input (got 1D input)"), ours.value
    x = torch.randn(1, 3)
    with pytest.raises(ValueError) as theirs:
        F.batch_norm(x, None, None, training=True)
    with pytest.raises(ValueError) as ours:
        m(x)
    assert str(ours.value).endswith(": " + str(theirs.value)), (ours.value, theirs.value)


@pytest.mark.parametrize("dims", [9, 10])
def test_any_input_rank_equals_batch_norm(dims):
    shape = (3, 2) + (2,) * (dims - 3) + (1,)
    g = torch.Generator().manual_seed(dims)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    dy = torch.randn(shape, generator=g, dtype=torch.float64)
    m = st.SyncBatchNorm(2, dtype=torch.float64)
    ref = nn.BatchNorm1d(2, dtype=torch.float64)
    xa, xb = x.clone().requires_grad_(), x.reshape(3, 2, -1).clone().requires_grad_()
    y, want = m(xa), ref(xb)
    assert y.shape == x.shape
    assert torch.allclose(y.reshape(3, 2, -1), want, atol=1e-12)
    y.backward(dy)
    want.backward(dy.reshape(3, 2, -1))
    assert torch.allclose(xa.grad.reshape(3, 2, -1), xb.grad, atol=1e-12)
    assert torch.allclose(m.weight.grad, ref.weight.grad, atol=1e-12)
    assert torch.allclose(m.running_var, ref.running_var, atol=1e-12)
    assert m.seen_input_dim == dims
    m.eval(), ref.eval()
    assert torch.allclose(m(x).reshape(3, 2, -1), ref(x.reshape(3, 2, -1)), atol=1e-12)


def test_torchvision_resnet_converts_under_patch_and_reverts():
    """torchvision's reference scripts (--sync-bn) call torch.nn.SyncBatchNorm's own
    convert_sync_batchnorm; under patch() the converted resnet18 trains on CPU outside a
    process group exactly as the BatchNorm2d model it came from (batch statistics of the
    whole local batch), and revert gives BatchNorm2d layers back."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(2)
    plain = torchvision.models.resnet18(num_classes=10).double()
    st.patch()
    try:
        import copy
        synced = nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(plain))
        kinds = {type(m) for m in synced.modules()}
        assert nn.SyncBatchNorm in kinds and nn.BatchNorm2d not in kinds
        x = torch.randn(4, 3, 32, 32, dtype=torch.float64)
        want, got = plain(x), synced(x)
        assert torch.allclose(got, want, atol=1e-9), float((got - want).abs().max())
        got.sum().backward()
        want.sum().backward()
        for (name, a), b in zip(plain.named_parameters(), synced.parameters()):
            assert torch.allclose(a.grad, b.grad, atol=1e-8), name
        for (name, a), b in zip(plain.named_buffers(), synced.buffers()):
            assert torch.allclose(a.double(), b.double(), atol=1e-12), name
        reverted = st.revert_sync_batchnorm(synced)
        assert nn.SyncBatchNorm not in {type(m) for m in reverted.modules()}
    finally:
        st.unpatch()
