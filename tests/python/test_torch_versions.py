"""What torch 2.x adds: torch.compile of a model holding syncbn's SyncBatchNorm.

torch.compile (dynamo) must not trace into the module's ctypes calls: the
forward is marked for dynamo to skip (a graph break), so a compiled model runs
the layer eagerly and gives eager's results. The test needs torch >= 2 and is
skipped, saying so, on torch 1.x (CI's Debian torch 1.13).
"""
import copy

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import syncbn.torch as st  # noqa: E402


@pytest.mark.skipif(not hasattr(torch, "compile"),
                    reason="torch.compile needs torch >= 2 (this is torch %s)" % torch.__version__)
@pytest.mark.parametrize("cls", ["ours", "patched"])
def test_compile_runs_and_equals_eager(cls):
    if cls == "patched":
        st.patch()
    try:
        bn = st.SyncBatchNorm if cls == "ours" else nn.SyncBatchNorm
        torch.manual_seed(3)
        eager = nn.Sequential(nn.Conv2d(3, 4, 3), bn(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 2))
        model = copy.deepcopy(eager)
        compiled = torch.compile(model)
        for step in range(2):
            x = torch.randn(5, 3, 6, 6, generator=torch.Generator().manual_seed(step))
            want, got = eager(x), compiled(x)
            assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), step
            want.square().sum().backward()
            got.square().sum().backward()
        for (name, a), b in zip(eager.named_parameters(), model.parameters()):
            assert torch.allclose(a.grad, b.grad, rtol=1e-4, atol=1e-6), name
        for (name, a), b in zip(eager.named_buffers(), model.buffers()):
            assert torch.equal(a, b), name
        eager.eval(), compiled.eval()
        x = torch.randn(2, 3, 6, 6)
        assert torch.allclose(compiled(x), eager(x), rtol=1e-5, atol=1e-6)
    finally:
        st.unpatch()
