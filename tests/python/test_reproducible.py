"""SyncBatchNorm(reproducible=True): the same bits for 1, 2 and 3 gloo ranks.

The global batch is split [5], [2, 3] and [3, 0, 2] (an empty rank included) over
processes running syncbn.torch.SyncBatchNorm(..., reproducible=True) for two
training steps; y and grad_input (concatenated over ranks in sample order) and
every rank's running statistics and num_batches_tracked must be bitwise equal to
the one-process run, for (N, C), (N, C, L), both layouts of (N, C, H, W) and
(N, C, D, H, W), f32, bf16, f16 and f64. The same data in the default mode is
also run over [2, 3]: it must match whole-batch BatchNorm within the usual
tolerance (tests/python/test_distributed_equivalence.py), and the reproducible
run must too (the mode does not trade accuracy). grad_weight and grad_bias are
per-rank shares (as torch.nn.SyncBatchNorm's) and are summed by the caller, so
they are compared with a tolerance only.
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ranks  # noqa: E402
from world import run_world  # noqa: E402


def _cases():
    base = dict(C=3, counts=None, channels_last=False, affine=True, track=True, momentum=0.1,
                steps=2)
    specs = [
        dict(spatial=(), dtype="f32"),
        dict(spatial=(5,), dtype="f64", momentum=None),
        dict(spatial=(4, 3), dtype="f32"),
        dict(spatial=(4, 3), dtype="bf16", channels_last=True),
        dict(spatial=(2, 3, 2), dtype="f16"),
    ]
    return [dict(base, id=100 + i, **s) for i, s in enumerate(specs)]


def repro_rank(rank, world, cases, counts, reproducible):
    import syncbn.torch as st
    out = []
    for case in cases:
        case = dict(case, counts=counts)
        m = st.SyncBatchNorm(case["C"], momentum=case["momentum"], affine=case["affine"],
                             track_running_stats=case["track"], dtype=ranks.param_dtype(case),
                             reproducible=reproducible)
        w, b = ranks.case_params(case)
        with torch.no_grad():
            m.weight.copy_(w)
            m.bias.copy_(b)
        lo = sum(counts[:rank])
        hi = lo + counts[rank]
        d = ranks.DTYPES[case["dtype"]]
        for step in range(case["steps"]):
            xf, dyf = ranks.case_data(case, step)
            x = ranks._layout(xf[lo:hi].to(d), case).requires_grad_()
            dy = ranks._layout(dyf[lo:hi].to(d), case)
            m.zero_grad(set_to_none=True)
            y = m(x)
            y.backward(dy)
        out.append({key: (_bits(t), t.detach().double().contiguous().numpy().copy())
                    for key, t in (("y", y), ("grad_input", x.grad),
                                   ("running_mean", m.running_mean),
                                   ("running_var", m.running_var),
                                   ("grad_weight", m.weight.grad), ("grad_bias", m.bias.grad))})
        out[-1]["num_batches_tracked"] = int(m.num_batches_tracked)
    return out


def _bits(t):
    """The raw bytes of a tensor in sample-major order (bf16/f16 included), picklable."""
    t = t.detach().contiguous()
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def _run(counts, reproducible=True):
    return run_world(repro_rank, len(counts), _cases(), counts, reproducible)


def test_same_bits_for_one_two_and_three_ranks():
    single = _run([5])
    for counts in ([2, 3], [3, 0, 2]):
        multi = _run(counts)
        for i, case in enumerate(_cases()):
            label = "case %s over %s" % ({k: case[k] for k in ("spatial", "dtype",
                                                                "channels_last")}, counts)
            for key in ("y", "grad_input"):  # sample-major bytes, concatenated over ranks
                got = b"".join(r[i][key][0] for r in multi)
                assert got == single[0][i][key][0], "%s: %s differs" % (label, key)
            for r in multi:
                for key in ("running_mean", "running_var"):
                    assert r[i][key][0] == single[0][i][key][0], "%s: %s differs" % (label, key)
                assert r[i]["num_batches_tracked"] == single[0][i]["num_batches_tracked"]
            for key in ("grad_weight", "grad_bias"):  # shares: their sum, with a tolerance
                total = sum(r[i][key][1] for r in multi)
                ref = single[0][i][key][1]
                assert np.allclose(total, ref, rtol=1e-3, atol=1e-3), "%s: %s" % (label, key)


def test_reproducible_mode_is_as_accurate_as_the_default():
    counts = [2, 3]
    for reproducible in (False, True):
        results = _run(counts, reproducible)
        for i, case in enumerate(_cases()):
            case = dict(case, counts=counts)
            want = ranks.oracle(case)
            unit = {"f64": 2.0 ** -52, "f32": 2.0 ** -24, "f16": 2.0 ** -11,
                    "bf16": 2.0 ** -8}[case["dtype"]]
            for key in ("y", "grad_input"):
                got = np.concatenate([r[i][key][1] for r in results], axis=0)
                scale = max(float(np.max(np.abs(want[key]))), 1e-30)
                d = float(np.max(np.abs(got - want[key])))
                assert d <= 16 * unit * scale, "%s reproducible=%s: %s off by %.3g" % (
                    case["dtype"], reproducible, key, d)


def test_module_flag_and_convert():
    import syncbn.torch as st
    m = st.SyncBatchNorm(4, reproducible=True)
    assert m.reproducible and "reproducible=True" in repr(m)
    net = st.convert_sync_batchnorm(torch.nn.Sequential(torch.nn.BatchNorm2d(4)),
                                    reproducible=True)
    assert isinstance(net[0], st.SyncBatchNorm) and net[0].reproducible
    assert not st.SyncBatchNorm(4).reproducible
