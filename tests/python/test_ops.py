"""The native ops and PyTorch-named ops against float64 formulas; views, errors, loading.

Oracles are float64 numpy/torch expressions of the formulas in ops.h (mean,
biased variance, Chan merge by counts, elementwise forward and backward). Inputs
come as numpy arrays and torch tensors, contiguous, channels_last and strided
(a step-2 slice, a transposed view), in f64, f32, f16 and bf16.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import syncbn  # noqa: E402

EPS = 1e-5


def _x(shape=(4, 3, 5, 6), seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * 2 + 1).to(dtype)


def _stats64(x):
    d = x.double()
    dims = [0] + list(range(2, d.dim()))
    return d.mean(dims), 1 / torch.sqrt(d.var(dims, unbiased=False) + EPS)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 1e-6),
                                       (torch.float16, 1e-6), (torch.bfloat16, 1e-6)])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "strided"])
def test_batch_norm_stats_any_layout_and_dtype(dtype, tol, layout):
    x = _x((6, 3, 8, 5), dtype=dtype)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    elif layout == "strided":
        x = x[::2, :, 1::2]
    mean, invstd = syncbn.batch_norm_stats(x, EPS)
    assert mean.dtype == (torch.float64 if dtype == torch.float64 else torch.float32)
    wm, wi = _stats64(x)
    assert torch.allclose(mean.double(), wm, rtol=tol, atol=tol)
    assert torch.allclose(invstd.double(), wi, rtol=tol, atol=tol)


def test_numpy_arrays_work_zero_copy():
    a = _x().numpy()
    mean, invstd = syncbn.stats(a.transpose(0, 1, 3, 2), EPS)
    assert isinstance(mean, np.ndarray)
    wm, wi = _stats64(torch.from_numpy(a))
    np.testing.assert_allclose(mean, wm.numpy(), rtol=1e-12)
    y = syncbn.elemt(a, mean, invstd)
    np.testing.assert_allclose(y.mean(axis=(0, 2, 3)), 0, atol=1e-12)
    out = np.empty_like(a)
    assert syncbn.elemt(a, mean, invstd, out=out) is out


def test_gather_and_elemt_split_equals_whole_batch():
    """The six torch-named ops run a 3-way split by hand; equals whole-batch batch norm."""
    x = _x((7, 3, 4, 4), seed=1)
    parts = [x[:3], x[3:3], x[3:]]  # uneven, one empty
    c = x.size(1)
    means, invs, counts = [], [], []
    for p in parts:
        if p.size(0):
            m, i = syncbn.batch_norm_stats(p, EPS)
        else:
            m, i = torch.zeros(c, dtype=x.dtype), torch.ones(c, dtype=x.dtype)
        means.append(m)
        invs.append(i)
        counts.append(p.numel() // c)
    rm, rv = torch.zeros(c, dtype=x.dtype), torch.ones(c, dtype=x.dtype)
    mean, invstd = syncbn.batch_norm_gather_stats_with_counts(
        x, torch.stack(means), torch.stack(invs), rm, rv, 0.1, EPS,
        torch.tensor(counts, dtype=x.dtype))
    wm, wi = _stats64(x)
    assert torch.allclose(mean, wm, atol=1e-12) and torch.allclose(invstd, wi, rtol=1e-10)
    d = x.double()
    dims = [0, 2, 3]
    assert torch.allclose(rm, 0.1 * wm, atol=1e-12)
    assert torch.allclose(rv, 0.9 + 0.1 * d.var(dims, unbiased=True), rtol=1e-10)
    w, b = torch.rand(c, dtype=x.dtype) + 0.5, torch.randn(c, dtype=x.dtype)
    y = torch.cat([syncbn.batch_norm_elemt(p, w, b, mean, invstd, EPS) for p in parts])
    want = torch.nn.functional.batch_norm(x, None, None, w, b, True, 0.0, EPS)
    assert torch.allclose(y, want, atol=1e-12)
    # backward: local reduce, summed sums, elementwise with the per-rank counts
    xg = x.clone().requires_grad_()
    dy = _x(x.shape, seed=2)
    torch.nn.functional.batch_norm(xg, None, None, w, b, True, 0.0, EPS).backward(dy)
    sums = [syncbn.batch_norm_backward_reduce(dy[:3], parts[0], mean, invstd, w, True, True,
                                              True),
            syncbn.batch_norm_backward_reduce(dy[3:], parts[2], mean, invstd, w, True, True,
                                              True)]
    sum_dy = sums[0][0] + sums[1][0]
    sum_dy_xmu = sums[0][1] + sums[1][1]
    gi = torch.cat([syncbn.batch_norm_backward_elemt(dy[:3], parts[0], mean, invstd, w, sum_dy,
                                                     sum_dy_xmu, torch.tensor(counts,
                                                                              dtype=torch.int32)),
                    syncbn.batch_norm_backward_elemt(dy[3:], parts[2], mean, invstd, w, sum_dy,
                                                     sum_dy_xmu, torch.tensor(counts,
                                                                              dtype=torch.int32))])
    assert torch.allclose(gi, xg.grad, atol=1e-12)
    gw = sums[0][2] + sums[1][2]
    want_gw = (dy * (x - wm[None, :, None, None]) * wi[None, :, None, None]).sum((0, 2, 3))
    assert torch.allclose(gw, want_gw, atol=1e-10)
    masked = syncbn.batch_norm_backward_reduce(dy, x, mean, invstd, w, False, True, False)
    assert masked[0] is None and masked[1] is None and masked[3] is None


def test_moments_and_gather_moments():
    x = _x((5, 2, 3))
    parts = np.stack([syncbn.stats_moments(x[:2]).numpy(), syncbn.stats_moments(x[2:2]).numpy(),
                      syncbn.stats_moments(x[2:]).numpy()])
    mean, invstd, total = syncbn.gather_moments(parts, 0.1, EPS)
    wm, wi = _stats64(x)
    np.testing.assert_allclose(mean, wm.numpy(), atol=1e-12)
    np.testing.assert_allclose(invstd, wi.numpy(), rtol=1e-12)
    np.testing.assert_allclose(total[:, 0], 15)


def test_batch_norm_and_backward_match_torch():
    x = _x((4, 3, 6), dtype=torch.float32)
    w, b = torch.rand(3) + 0.5, torch.randn(3)
    rm, rv = torch.zeros(3), torch.ones(3)
    y, sm, si = syncbn.batch_norm(x, w, b, rm, rv, True, 0.1, EPS)
    rm2, rv2 = torch.zeros(3), torch.ones(3)
    xg = x.clone().requires_grad_()
    want = torch.nn.functional.batch_norm(xg, rm2, rv2, w, b, True, 0.1, EPS)
    assert torch.allclose(y, want, atol=1e-5) and torch.allclose(rv, rv2, rtol=1e-5)
    dy = _x(x.shape, seed=4, dtype=torch.float32)
    want.backward(dy)
    gi, gw, gb = syncbn.batch_norm_backward(dy, x, w, None, None, sm, si, True, EPS)
    assert torch.allclose(gi, xg.grad, atol=1e-5)


@pytest.mark.parametrize("bad,words", [
    (lambda: syncbn.batch_norm_stats(torch.randn(5), EPS), "dims"),
    (lambda: syncbn.batch_norm_stats(torch.randint(0, 3, (4, 3)), EPS), "BAD_DTYPE"),
    (lambda: syncbn.batch_norm_stats(torch.randn(4, 3).to(torch.complex64), EPS), "dtype"),
    (lambda: syncbn.batch_norm_stats(torch.empty(4, 3, device="meta"), EPS), "CPU"),
    (lambda: syncbn.batch_norm_elemt(torch.randn(4, 3), None, None, torch.zeros(2),
                                     torch.ones(3), EPS), "mean has shape"),
    (lambda: syncbn.stats(torch.randn(4, 3).to_sparse()), "layout"),
    (lambda: syncbn.stats([[1.0, 2.0]]), "numpy array or a torch tensor"),
])
def test_bad_tensors_raise_syncbn_error(bad, words):
    with pytest.raises(syncbn.SyncBNError, match=words) as info:
        bad()
    assert info.value.status < 0 and info.value.status_name.startswith("SBN_ERR_")


def test_thread_count_does_not_change_bits():
    x = _x((8, 5, 32, 33), dtype=torch.float32)
    before = syncbn.get_num_threads()
    try:
        syncbn.set_num_threads(1)
        a = syncbn.batch_norm_stats(x, EPS)
        syncbn.set_num_threads(3)
        assert syncbn.get_num_threads() == 3
        b = syncbn.batch_norm_stats(x, EPS)
    finally:
        syncbn.set_num_threads(before)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def _python(code, env_extra, cwd=None):
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_sbn_num_threads_sets_the_pool():
    r = _python("import syncbn; print(syncbn.get_num_threads())", {"SBN_NUM_THREADS": "3"})
    assert r.returncode == 0 and r.stdout.strip() == "3", r.stderr
    r = _python("import syncbn; syncbn.get_num_threads()", {"SBN_NUM_THREADS": "lots"})
    assert r.returncode != 0 and "SBN_NUM_THREADS" in r.stderr


def test_import_error_lists_every_place_tried(tmp_path):
    shutil.copytree(os.path.dirname(syncbn.__file__), tmp_path / "syncbn",
                    ignore=shutil.ignore_patterns("*.so*", "__pycache__"))
    r = _python("import syncbn", {"SBN_LIBRARY": str(tmp_path / "nope.so"),
                                  "PYTHONPATH": str(tmp_path), "LD_LIBRARY_PATH": ""},
                cwd=str(tmp_path))
    assert r.returncode != 0
    for words in ("ImportError", "SBN_LIBRARY", "nope.so", "next to the package",
                  "source checkout", "system loader path"):
        assert words in r.stderr, (words, r.stderr)
    lib = syncbn.library_path
    r = _python("import syncbn; print(syncbn.library_path)",
                {"SBN_LIBRARY": lib, "PYTHONPATH": str(tmp_path)}, cwd=str(tmp_path))
    assert r.returncode == 0 and r.stdout.strip() == os.path.realpath(lib), r.stderr


def _neg_bit(t):
    """A tensor equal to t that carries torch's negative bit: the imaginary part of a conjugated
    complex view, whose memory holds -t (torch negates it lazily, on read by its own ops)."""
    z = torch.complex(torch.zeros_like(t), -t)
    v = z.conj().imag
    assert v.is_neg() and torch.equal(v, t)
    return v


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_negative_bit_inputs_are_read_negated(dtype):
    """Issue 25: ops read a negative-bit tensor's memory un-negated (stats gave mean 10 for -10)."""
    x = _x((4, 2, 3), seed=5, dtype=dtype) - torch.tensor([10.0, 13.0], dtype=dtype)[:, None]
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    mean, invstd = syncbn.stats(_neg_bit(x), EPS)
    wm, wi = _stats64(x)
    assert torch.allclose(mean.double(), wm, rtol=tol, atol=tol), (mean, wm)
    assert torch.allclose(invstd.double(), wi, rtol=tol, atol=tol)
    w, b = torch.rand(2, dtype=dtype) + 0.5, torch.randn(2, dtype=dtype)
    y = syncbn.elemt(_neg_bit(x), _neg_bit(mean), _neg_bit(invstd), _neg_bit(w), _neg_bit(b))
    want = torch.nn.functional.batch_norm(x.double(), None, None, w.double(), b.double(), True,
                                          0.0, EPS)
    assert torch.allclose(y.double(), want, rtol=tol, atol=tol)
    counts = torch.tensor([2.0, 3.0], dtype=dtype)
    gm, _ = syncbn.gather_stats_with_counts(_neg_bit(torch.stack([mean, mean])),
                                            torch.stack([invstd, invstd]), _neg_bit(counts))
    assert torch.allclose(gm.double(), wm, rtol=tol, atol=tol)
    gm, _, total = syncbn.gather_moments(_neg_bit(syncbn.stats_moments(x)[None]))
    assert torch.allclose(gm, wm, rtol=tol, atol=tol) and float(total[0, 0]) == 12


@pytest.mark.parametrize("name", ["running_mean", "running_var", "out"])
def test_negative_bit_outputs_are_refused_untouched(name):
    """An output written in place through its data pointer cannot carry the negative bit: the
    values would be stored un-negated. It is refused, naming it, and left as it was."""
    x = _x((4, 3, 5), seed=6)
    rm, rv = torch.zeros(3, dtype=x.dtype), torch.ones(3, dtype=x.dtype)
    out = torch.zeros_like(x)
    target = {"running_mean": rm, "running_var": rv, "out": out}[name]
    neg = _neg_bit(target.clone())
    before = neg.clone()
    args = {"running_mean": rm, "running_var": rv, "out": out, name: neg}
    with pytest.raises(syncbn.BadInputError, match=name + r" .*negative bit"):
        if name == "out":
            syncbn.elemt(x, torch.zeros(3, dtype=x.dtype), torch.ones(3, dtype=x.dtype),
                         out=args["out"])
        else:
            syncbn.batch_norm(x, None, None, args["running_mean"], args["running_var"], True)
    assert torch.equal(neg, before)
