"""SyncBatchNorm over 2 and 3 gloo ranks (uneven, one empty) equals whole-batch BatchNorm.

For (N, C), (N, C, L), (N, C, H, W) in both layouts and (N, C, D, H, W), f64,
f32, f16 and bf16 inputs, affine on/off, tracking on/off, momentum 0.1 and None,
two training steps: y and grad_input (concatenated over ranks), grad_weight and
grad_bias (summed over ranks) and every rank's running statistics and
num_batches_tracked are compared with torch's BatchNorm1d/2d/3d in float64 on the
concatenated batch (same rounded values). A difference d passes when
d <= tol * scale, scale being the tensor's largest magnitude (for summed
gradients, the largest per-channel sum of |share|); tol is 1e-10 for f64, and
16 unit roundoffs of the output dtype otherwise (f32 2^-24: ~1e-6; f16 2^-11;
bf16 2^-8: 6%, the looser bound stated for bf16). The largest differences are
printed (pytest -s).
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ranks  # noqa: E402
from world import run_world  # noqa: E402

UNIT = {"torch.float64": None, "torch.float32": 2.0 ** -24, "torch.float16": 2.0 ** -11,
        "torch.bfloat16": 2.0 ** -8}


def _tol(dtype_name):
    u = UNIT[dtype_name]
    return 1e-10 if u is None else 16 * u


def _cases(counts):
    base = dict(C=3, counts=counts, channels_last=False, affine=True, track=True, momentum=0.1,
                steps=2)
    specs = [
        dict(spatial=(), dtype="f64"),
        dict(spatial=(5,), dtype="f64", momentum=None),
        dict(spatial=(4, 3), dtype="f64"),
        dict(spatial=(4, 3), dtype="f64", channels_last=True, momentum=None),
        dict(spatial=(2, 3, 2), dtype="f64"),
        dict(spatial=(2, 3, 2), dtype="f64", channels_last=True),
        dict(spatial=(4, 3), dtype="f64", affine=False),
        dict(spatial=(5,), dtype="f64", track=False),
        dict(spatial=(), dtype="f32"),
        dict(spatial=(6, 5), dtype="f32"),
        dict(spatial=(6, 5), dtype="f32", channels_last=True),
        dict(spatial=(2, 3, 2), dtype="f32", momentum=None),
        dict(spatial=(4, 3), dtype="bf16"),
        dict(spatial=(4, 3), dtype="f16", channels_last=True),
    ]
    return [dict(base, id=i, **s) for i, s in enumerate(specs)]


def _check(name, got, want, dtype_name, scale, report):
    d = float(np.max(np.abs(got - want))) if want.size else 0.0
    tol = _tol(dtype_name) * max(scale, 1e-30)
    report.append((name, dtype_name, d))
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (name, got.shape, want.shape)
    assert d <= tol, "%s (%s): max |difference| %.3g > %.3g" % (name, dtype_name, d, tol)


def _compare(case, results, report):
    want = ranks.oracle(case)
    act = results[0][case["id"]]["dtype"]
    pdt = str(ranks.param_dtype(case))
    label = "case %d %s" % (case["id"], {k: case[k] for k in ("spatial", "dtype", "channels_last",
                                                              "affine", "track", "momentum")})
    per = [r[case["id"]] for r in results]
    for key in ("y", "grad_input"):
        got = np.concatenate([p[key] for p in per], axis=0)
        _check(label + " " + key, got, want[key], act, np.max(np.abs(want[key])), report)
    if case["affine"]:
        for key in ("grad_weight", "grad_bias"):
            shares = np.stack([p[key] for p in per])
            _check(label + " " + key + " (sum over ranks)", shares.sum(axis=0), want[key], pdt,
                   max(np.max(np.abs(shares).sum(axis=0)), np.max(np.abs(want[key]))), report)
    for r, p in enumerate(per):
        assert p["num_batches_tracked"] == want["num_batches_tracked"], label
        if case["track"]:
            for key in ("running_mean", "running_var"):
                _check("%s %s (rank %d)" % (label, key, r), p[key], want[key], pdt,
                       np.max(np.abs(want[key])), report)
        else:
            assert p["running_mean"] is None and p["running_var"] is None
        if "y_channels_last" in p:
            assert p["y_channels_last"] and p["grad_channels_last"], \
                label + ": channels_last input must give channels_last y and grad_input"


def _run(counts, use_torch_class=False):
    cases = _cases(counts)
    results = run_world(ranks.equivalence_rank, len(counts), cases, use_torch_class)
    report = []
    for case in cases:
        _compare(case, results, report)
    worst = {}
    for name, dt, d in report:
        worst[dt] = max(worst.get(dt, 0.0), d)
    print("\nlargest differences from whole-batch BatchNorm (counts %s): %s"
          % (counts, ", ".join("%s %.3g" % kv for kv in sorted(worst.items()))))


def test_two_ranks_one_empty():
    _run([0, 5])


def test_three_ranks_uneven_one_empty():
    _run([3, 0, 2])


def test_patched_torch_syncbatchnorm_trains_on_cpu():
    """The unchanged torch.nn.SyncBatchNorm, after syncbn.torch.patch(), in a 2-rank world."""
    _run([2, 3], use_torch_class=True)
