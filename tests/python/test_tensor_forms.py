"""Every op and the module on torch tensors of every form torch can hand them, against oracles.

A form is how a tensor's values sit in memory: plain (contiguous), neg (torch's
negative bit: memory holds -values), conj_imag (the imaginary part of a conjugated
complex view, which carries the negative bit), transposed (every dim's memory
order reversed), channels_last, sliced (every dim a step-2 slice of a larger
buffer, at a storage offset), offset (contiguous at a storage offset of 5),
expanded (stride 0 along dim 0: the values repeat along it), and neg over sliced,
transposed and expanded views. Each case gives every tensor argument of one op
the same form, or (``mixed-<seed>``) a form drawn per argument. The values are
drawn in float64, rounded to the case dtype, and the oracle is the op's formula
(ops.h) in float64 on those same values, or torch's own F.batch_norm and autograd
for the module; the memory around sliced and offset views holds NaN, so a read
outside the view shows. Outputs written in place (out=, running statistics in
training, folded weights) take the forms that can be written: the negative bit
is refused with an error naming the argument, a stride-0 output with
SBN_ERR_ALIAS, and neither writes anything. numpy arrays add the one layout torch
cannot make: negative strides.
"""
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import syncbn  # noqa: E402
import syncbn.torch as st  # noqa: E402

EPS = 1e-5
FORMS = ["plain", "neg", "conj_imag", "transposed", "channels_last", "sliced", "offset",
         "expanded", "neg_sliced", "neg_transposed", "neg_expanded"]
MIXED = ["mixed-%d" % i for i in range(4)]
DTYPES = {"f64": torch.float64, "f32": torch.float32, "bf16": torch.bfloat16}
# |got - want| <= TOL[dtype of the output] * max(|want|, 1): f64 1e-12 of the largest
# magnitude; otherwise 16 unit roundoffs of the output dtype (as the equivalence tests)
TOL = {torch.float64: 1e-12, torch.float32: 16 * 2.0 ** -24, torch.bfloat16: 16 * 2.0 ** -8}


def _reverse(t):
    dims = list(range(t.dim()))[::-1]
    return t.permute(dims).contiguous().permute(dims)


def _sliced(t):
    base = torch.full([2 * n + 1 for n in t.shape], float("nan"), dtype=t.dtype)
    view = base[tuple(slice(1, None, 2) for _ in t.shape)]
    view.copy_(t)
    return view


def _offset(t):
    base = torch.full((t.numel() + 5,), float("nan"), dtype=t.dtype)
    view = base[5:].view(t.shape)
    view.copy_(t)
    return view


def _neg_bit(t):
    """A tensor equal to t carrying the negative bit, its memory holding -t."""
    return torch._neg_view(-t)


def _conj_imag(t):
    if t.dtype in (torch.float32, torch.float64):
        return torch.complex(torch.zeros_like(t), -t).conj().imag
    return _neg_bit(t)  # torch has no complex type of bf16


def make(value, form, dtype):
    """(tensor of `form` holding value rounded to dtype, those values in float64). An expanded
    form repeats the first slice of dim 0, so it changes the values. The tensor never shares
    memory with value (an oracle computed from value after the call sees the values before)."""
    out, want = _make(value, form, dtype)
    # each form is what its name says (else a case would test the plain layout twice)
    assert out.is_neg() == (form.startswith("neg") or form == "conj_imag"), form
    if form.endswith("expanded") and out.dim() and out.shape[0] > 1:
        assert out.stride(0) == 0, form
    if form.endswith(("sliced", "offset")):
        assert out.storage_offset() > 0, form
    assert torch.equal(out.double(), want), form
    return out, want


def _make(value, form, dtype):
    t = value.to(dtype).clone()
    if form.endswith("expanded") and t.dim() >= 1 and t.shape[0] > 1:
        t = t[:1].expand(t.shape)
    want = t.to(torch.float64, copy=True)
    if form.startswith("neg_"):  # the negative bit over a view holding -values
        return torch._neg_view(_make(-value, form[4:], dtype)[0]), want
    if form == "neg":
        return _neg_bit(t), want
    if form == "conj_imag":
        return _conj_imag(t), want
    if form == "transposed":
        return _reverse(t), want
    if form == "channels_last":
        return (t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else _reverse(t),
                want)
    if form == "sliced":
        return _sliced(t), want
    if form == "offset":
        return _offset(t), want
    if form in ("plain", "expanded"):
        return t, want
    raise AssertionError(form)


class Args:
    """Builds the arguments of one case: every tensor in `form`, or mixed-<seed> forms."""

    def __init__(self, form, dtype, seed):
        self.form, self.dtype = form, dtype
        self.g = torch.Generator().manual_seed(seed)
        self.pick = random.Random(seed) if form.startswith("mixed") else None

    def randn(self, *shape, scale=1.0, shift=0.0):
        return torch.randn(shape, generator=self.g, dtype=torch.float64) * scale + shift

    def rand(self, *shape, lo=0.5, hi=1.5):
        return lo + (hi - lo) * torch.rand(shape, generator=self.g, dtype=torch.float64)

    def __call__(self, value, dtype=None):
        form = self.pick.choice(FORMS) if self.pick else self.form
        return make(value, form, dtype or self.dtype)


def _close(name, got, want, dtype):
    """got (any dtype) equals want (float64) within the output dtype's tolerance."""
    assert tuple(got.shape) == tuple(want.shape), (name, tuple(got.shape), tuple(want.shape))
    # float64 outputs of f32/bf16 inputs (moments, gathers) are held to f32's tolerance
    unit = TOL[torch.float32] if got.dtype == torch.float64 and dtype != got.dtype else \
        TOL[got.dtype]
    tol = unit * max(float(want.abs().max()), 1.0)
    d = float((got.double() - want).abs().max()) if want.numel() else 0.0
    assert d <= tol, "%s: max |difference| %.3g > %.3g" % (name, d, tol)


def _bc(v, x):
    """A [C] vector shaped to broadcast against x (N, C, ...)."""
    return v.view((1, -1) + (1,) * (x.dim() - 2))


def _dims(x):
    return [0] + list(range(2, x.dim()))


def _moments(x):
    """(count, mean, biased var) per channel of float64 x."""
    n = x.numel() // x.shape[1]
    return n, x.mean(_dims(x)), x.var(_dims(x), unbiased=False)


# ---- the ops: each returns [(name, got, want)], want in float64 ----

def op_stats(a):
    x, xv = a(a.randn(3, 4, 5, 2, scale=2, shift=-3))
    mean, invstd = syncbn.stats(x, EPS)
    _, m, v = _moments(xv)
    return [("mean", mean, m), ("invstd", invstd, 1 / torch.sqrt(v + EPS))]


def op_reduce(a):
    x, xv = a(a.randn(4, 3, 6, scale=2, shift=1))
    s, q = syncbn.reduce(x)
    return [("sum", s, xv.sum(_dims(xv))), ("square_sum", q, (xv * xv).sum(_dims(xv)))]


def op_stats_moments(a):
    x, xv = a(a.randn(3, 4, 2, 3, shift=2))
    n, m, v = _moments(xv)
    got = syncbn.stats_moments(x)
    want = torch.stack([torch.full_like(m, n), m, v * n], dim=1)
    return [("moments", got, want)]


def op_elemt(a):
    x, xv = a(a.randn(3, 4, 5, 2, scale=2))
    mean, mv = a(a.randn(4))
    invstd, iv = a(a.rand(4))
    w, wv = a(a.rand(4))
    b, bv = a(a.randn(4))
    y = syncbn.elemt(x, mean, invstd, w, b)
    return [("y", y, (xv - _bc(mv, xv)) * _bc(iv * wv, xv) + _bc(bv, xv))]


def op_backward_reduce(a):
    x, xv = a(a.randn(4, 3, 3, 2, shift=1))
    dy, dv = a(a.randn(4, 3, 3, 2))
    mean, mv = a(a.randn(3))
    invstd, iv = a(a.rand(3))
    sdy, sxmu, gw, gb = syncbn.backward_reduce(dy, x, mean, invstd)
    xmu = dv * (xv - _bc(mv, xv))
    return [("sum_dy", sdy, dv.sum(_dims(dv))), ("sum_dy_xmu", sxmu, xmu.sum(_dims(dv))),
            ("grad_weight", gw, xmu.sum(_dims(dv)) * iv), ("grad_bias", gb, dv.sum(_dims(dv)))]


def op_backward_elemt(a):
    x, xv = a(a.randn(3, 4, 5, shift=1))
    dy, dv = a(a.randn(3, 4, 5))
    mean, mv = a(a.randn(4))
    invstd, iv = a(a.rand(4))
    w, wv = a(a.rand(4))
    sdy, sv = a(a.randn(4, scale=5))
    sxmu, qv = a(a.randn(4, scale=5))
    n = 15 + 7  # this rank's 15 samples per channel and 7 on other ranks
    gi = syncbn.backward_elemt(dy, x, mean, invstd, w, sdy, sxmu, n)
    want = (dv - _bc(sv, xv) / n - (xv - _bc(mv, xv)) * _bc(iv * iv * qv, xv) / n) * \
        _bc(iv * wv, xv)
    return [("grad_input", gi, want)]


def op_batch_norm_train(a):
    x, xv = a(a.randn(4, 3, 3, 3, scale=2, shift=-1))
    w, wv = a(a.rand(3))
    b, bv = a(a.randn(3))
    rm0, rv0 = a.randn(3).to(a.dtype), a.rand(3).to(a.dtype)  # written in place: plain
    rm, rv = rm0.clone(), rv0.clone()
    y, sm, si = syncbn.batch_norm(x, w, b, rm, rv, True, 0.1, EPS)
    n, m, v = _moments(xv)
    inv = 1 / torch.sqrt(v + EPS)
    return [("y", y, (xv - _bc(m, xv)) * _bc(inv * wv, xv) + _bc(bv, xv)),
            ("save_mean", sm, m), ("save_invstd", si, inv),
            ("running_mean", rm, 0.9 * rm0.double() + 0.1 * m),
            ("running_var", rv, 0.9 * rv0.double() + 0.1 * v * n / (n - 1))]


def op_batch_norm_eval(a):
    x, xv = a(a.randn(4, 3, 3, 2, scale=2))
    w, wv = a(a.rand(3))
    b, bv = a(a.randn(3))
    rm, mv = a(a.randn(3))  # only read in eval: any form
    rv, vv = a(a.rand(3))
    y, _, _ = syncbn.batch_norm(x, w, b, rm, rv, False, 0.1, EPS)
    return [("y", y, (xv - _bc(mv, xv)) * _bc(wv / torch.sqrt(vv + EPS), xv) + _bc(bv, xv))]


def op_batch_norm_backward(a):
    x, xv = a(a.randn(3, 4, 3, 2, shift=1))
    dy, dv = a(a.randn(3, 4, 3, 2))
    w, wv = a(a.rand(4))
    sm, mv = a(a.randn(4))
    si, iv = a(a.rand(4))
    rm, rmv = a(a.randn(4))
    rv, rvv = a(a.rand(4))
    n = xv.numel() // 4
    out = []
    for training in (True, False):
        gi, gw, gb = syncbn.batch_norm_backward(dy, x, w, rm, rv, sm, si, training, EPS)
        if training:
            xhat = (xv - _bc(mv, xv)) * _bc(iv, xv)
            sdy, sdx = dv.sum(_dims(dv)), (dv * xhat).sum(_dims(dv))
            want = _bc(wv * iv, xv) / n * (n * dv - _bc(sdy, xv) - xhat * _bc(sdx, xv))
        else:
            inv = 1 / torch.sqrt(rvv + EPS)
            xhat = (xv - _bc(rmv, xv)) * _bc(inv, xv)
            want = dv * _bc(wv * inv, xv)
        tag = "train" if training else "eval"
        out += [("grad_input " + tag, gi, want),
                ("grad_weight " + tag, gw, (dv * xhat).sum(_dims(dv))),
                ("grad_bias " + tag, gb, dv.sum(_dims(dv)))]
    return out


def _merge(counts, means, m2s):
    """Global (N, mean, M2) per channel of per-rank (count, mean, M2), in float64."""
    n = counts.sum()
    mean = (counts[:, None] * means).sum(0) / n
    m2 = (m2s + counts[:, None] * (means - mean) ** 2).sum(0)
    return n, mean, m2


def op_gather_stats_with_counts(a):
    mean_all, mv = a(a.randn(3, 4, shift=1))
    invstd_all, iv = a(a.rand(3, 4))
    counts, cv = a(torch.tensor([5.0, 2.0, 9.0]))
    rm0, rv0 = a.randn(4).to(a.dtype), a.rand(4).to(a.dtype)
    rm, rv = rm0.clone(), rv0.clone()
    mean, invstd = syncbn.gather_stats_with_counts(mean_all, invstd_all, counts, 0.1, EPS, rm, rv)
    var = (1 / (iv * iv) - EPS).clamp(min=0)
    n, m, m2 = _merge(cv, mv, var * cv[:, None])
    return [("mean", mean, m), ("invstd", invstd, 1 / torch.sqrt(m2 / n + EPS)),
            ("running_mean", rm, 0.9 * rm0.double() + 0.1 * m),
            ("running_var", rv, 0.9 * rv0.double() + 0.1 * m2 / (n - 1))]


def op_gather_stats_from_sums(a):
    s, sv = a(a.randn(3, 4, scale=4, shift=6))
    q, qv = a(a.rand(3, 4, lo=60, hi=90))
    counts, cv = a(torch.tensor([5.0, 3.0, 8.0]))
    rm0, rv0 = a.randn(4).to(a.dtype), a.rand(4).to(a.dtype)
    rm, rv = rm0.clone(), rv0.clone()
    mean, invstd = syncbn.gather_stats_from_sums(s, q, counts, 0.1, EPS, rm, rv)
    n = cv.sum()
    m = sv.sum(0) / n
    var = (qv.sum(0) / n - m * m).clamp(min=0)
    return [("mean", mean, m), ("invstd", invstd, 1 / torch.sqrt(var + EPS)),
            ("running_mean", rm, 0.9 * rm0.double() + 0.1 * m),
            ("running_var", rv, 0.9 * rv0.double() + 0.1 * var * n / (n - 1))]


def op_gather_moments(a):
    counts = torch.tensor([4.0, 6.0, 3.0])
    parts = torch.stack([counts[:, None].expand(3, 4), a.randn(3, 4, shift=2),
                         a.rand(3, 4, lo=1, hi=9)], dim=2)
    p, pv = a(parts)
    mean, invstd, total = syncbn.gather_moments(p, 0.1, EPS)
    n, m, m2 = _merge(pv[:, 0, 0], pv[:, :, 1], pv[:, :, 2])
    return [("mean", mean, m), ("invstd", invstd, 1 / torch.sqrt(m2 / n + EPS)),
            ("total", total, torch.stack([torch.full_like(m, float(n)), m, m2], dim=1))]


def op_fold_conv(a):
    cw, cwv = a(a.randn(4, 3, 3, 2))
    cb, cbv = a(a.randn(4))
    bw, bwv = a(a.rand(4))
    bb, bbv = a(a.randn(4))
    rm, rmv = a(a.randn(4))
    rv, rvv = a(a.rand(4))
    fw, fb = syncbn.fold_conv(cw, cb, bw, bb, rm, rv, EPS)
    scale = bwv / torch.sqrt(rvv + EPS)
    return [("folded_weight", fw, cwv * scale.view(4, 1, 1, 1)),
            ("folded_bias", fb, (cbv - rmv) * scale + bbv)]


OPS = [op_stats, op_reduce, op_stats_moments, op_elemt, op_backward_reduce, op_backward_elemt,
       op_batch_norm_train, op_batch_norm_eval, op_batch_norm_backward,
       op_gather_stats_with_counts, op_gather_stats_from_sums, op_gather_moments, op_fold_conv]


@pytest.mark.parametrize("form", FORMS + MIXED)
@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16"])
@pytest.mark.parametrize("op", OPS, ids=[f.__name__[3:] for f in OPS])
def test_op_reads_every_form(op, dtype, form):
    seed = 1000 * OPS.index(op) + 10 * (FORMS + MIXED).index(form) + list(DTYPES).index(dtype)
    a = Args(form, DTYPES[dtype], seed)
    for name, got, want in op(a):
        _close("%s (%s, %s)" % (name, dtype, form), got, want, a.dtype)


def test_conjugate_bit_complex_is_refused_by_dtype():
    """The conjugate bit exists on complex tensors only, which syncbn refuses by dtype before
    reading any memory."""
    z = torch.complex(torch.randn(4, 3), torch.randn(4, 3)).conj()
    assert z.is_conj()
    with pytest.raises(syncbn.BadInputError, match="x has dtype torch.complex64"):
        syncbn.stats(z)
    with pytest.raises(syncbn.BadInputError, match="dtype"):
        st.SyncBatchNorm(3)(z)


# ---- outputs written in place ----

WRITABLE = ["plain", "transposed", "sliced", "offset", "neg", "expanded"]


def _write_elemt(out_of):
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    mean, invstd = torch.randn(4, dtype=torch.float64), torch.rand(4, dtype=torch.float64) + 0.5
    out = out_of(torch.zeros_like(x))
    syncbn.elemt(x, mean, invstd, out=out)
    return [("out", out, (x - _bc(mean, x)) * _bc(invstd, x))]


def _write_backward_elemt(out_of):
    x, dy = torch.randn(3, 4, 5, dtype=torch.float64), torch.randn(3, 4, 5, dtype=torch.float64)
    mean, invstd = torch.randn(4, dtype=torch.float64), torch.rand(4, dtype=torch.float64) + 0.5
    sdy, sxmu = torch.randn(4, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    out = out_of(torch.zeros_like(x))
    syncbn.backward_elemt(dy, x, mean, invstd, None, sdy, sxmu, 20, out=out)
    want = (dy - _bc(sdy, x) / 20 - (x - _bc(mean, x)) * _bc(invstd ** 2 * sxmu, x) / 20) * \
        _bc(invstd, x)
    return [("out", out, want)]


def _write_running_stats(out_of):
    x = torch.randn(4, 3, 5, dtype=torch.float64)
    rm0, rv0 = torch.randn(3, dtype=torch.float64), torch.rand(3, dtype=torch.float64) + 0.5
    rm, rv = out_of(rm0.clone()), out_of(rv0.clone())
    syncbn.batch_norm(x, None, None, rm, rv, True, 0.1, EPS)
    n, m, v = _moments(x)
    return [("running_mean", rm, 0.9 * rm0 + 0.1 * m),
            ("running_var", rv, 0.9 * rv0 + 0.1 * v * n / (n - 1))]


def _write_gather(out_of):
    mean_all = torch.randn(2, 3, dtype=torch.float64)
    invstd_all = torch.rand(2, 3, dtype=torch.float64) + 0.5
    counts = torch.tensor([3.0, 4.0], dtype=torch.float64)
    rm0 = torch.randn(3, dtype=torch.float64)
    rm = out_of(rm0.clone())
    syncbn.gather_stats_with_counts(mean_all, invstd_all, counts, 0.1, EPS, rm, None)
    n, m, _ = _merge(counts, mean_all, torch.zeros_like(mean_all))
    return [("running_mean", rm, 0.9 * rm0 + 0.1 * m)]


def _write_fold(out_of):
    cw, cb = torch.randn(4, 3, 2, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    rm, rv = torch.randn(4, dtype=torch.float64), torch.rand(4, dtype=torch.float64) + 0.5
    fw, fb = out_of(torch.zeros_like(cw)), out_of(torch.zeros_like(cb))
    syncbn.fold_conv(cw, cb, None, None, rm, rv, EPS, out_weight=fw, out_bias=fb)
    scale = 1 / torch.sqrt(rv + EPS)
    return [("folded_weight", fw, cw * scale.view(4, 1, 1)),
            ("folded_bias", fb, (cb - rm) * scale)]


WRITERS = [_write_elemt, _write_backward_elemt, _write_running_stats, _write_gather, _write_fold]


@pytest.mark.parametrize("form", WRITABLE)
@pytest.mark.parametrize("writer", WRITERS, ids=[f.__name__[7:] for f in WRITERS])
def test_outputs_written_in_place(writer, form):
    made = []

    def out_of(t):
        out = make(t, form, t.dtype)[0]
        made.append((out, out.clone()))
        return out
    if form in ("plain", "transposed", "sliced", "offset"):
        for name, got, want in writer(out_of):
            _close("%s (%s)" % (name, form), got, want, torch.float64)
        return
    match = "negative bit" if form == "neg" else "SBN_ERR_ALIAS"
    with pytest.raises(syncbn.SyncBNError, match=match):
        writer(out_of)
    for out, before in made:
        assert torch.equal(out, before), "a refused call wrote an output"


# ---- the module: SyncBatchNorm against torch's F.batch_norm and autograd ----

def _module_case(form, dtype, training, seed):
    a = Args(form, DTYPES[dtype], seed)
    pdt = torch.float32 if a.dtype == torch.bfloat16 else a.dtype
    x, xv = a(a.randn(4, 3, 3, 2, scale=2, shift=1))
    dy, dv = a(a.randn(4, 3, 3, 2))
    w, wv = a(a.rand(3), pdt)
    b, bv = a(a.randn(3), pdt)
    m = st.SyncBatchNorm(3, dtype=pdt)
    # parameters of any form (Parameter keeps the view and its bits)
    m.weight, m.bias = torch.nn.Parameter(w), torch.nn.Parameter(b)
    if training:  # written in place: the forms that can be written
        wform = WRITABLE[seed % 4]
        rm, rmv = make(a.randn(3), wform, pdt)
        rv, rvv = make(a.rand(3), wform, pdt)
    else:  # only read: any form
        (rm, rmv), (rv, rvv) = a(a.randn(3), pdt), a(a.rand(3), pdt)
        m.eval()
    m.running_mean, m.running_var = rm, rv
    xg = x.detach().requires_grad_()
    y = m(xg)
    y.backward(dy)
    # the oracle: torch's batch norm in float64 on the same values, and its autograd
    xr = xv.clone().requires_grad_()
    wr, br = wv.clone().requires_grad_(), bv.clone().requires_grad_()
    rmr, rvr = rmv.clone(), rvv.clone()
    yr = F.batch_norm(xr, rmr, rvr, wr, br, training, 0.1, EPS)
    yr.backward(dv)
    out = [("y", y, yr.detach()), ("grad_input", xg.grad, xr.grad),
           ("grad_weight", m.weight.grad, wr.grad), ("grad_bias", m.bias.grad, br.grad),
           ("running_mean", m.running_mean, rmr), ("running_var", m.running_var, rvr)]
    return out, a.dtype


@pytest.mark.parametrize("form", FORMS + MIXED)
@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16"])
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_module_reads_every_form(training, dtype, form):
    seed = 77 + 10 * (FORMS + MIXED).index(form) + list(DTYPES).index(dtype)
    results, xdtype = _module_case(form, dtype, training, seed)
    for name, got, want in results:
        _close("%s (%s, %s, %s)" % (name, dtype, form, "train" if training else "eval"), got,
               want, xdtype)


# ---- numpy: the one layout torch cannot make, negative strides ----

@pytest.mark.parametrize("index", [(slice(None, None, -1),), (slice(None), slice(None, None, -1)),
                                   (Ellipsis, slice(None, None, -2)),
                                   (slice(None, None, -1),) * 3],
                         ids=["n", "c", "w_step_2", "all"])
def test_numpy_negative_strides(index):
    base = torch.randn(5, 3, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    a = base.numpy()[index]
    xv = torch.from_numpy(a.copy())
    n, m, v = _moments(xv)
    mean, invstd = syncbn.stats(a, EPS)
    _close("mean", torch.from_numpy(mean), m, torch.float64)
    _close("invstd", torch.from_numpy(invstd), 1 / torch.sqrt(v + EPS), torch.float64)
    out = np.zeros_like(base.numpy())[index]
    syncbn.elemt(a, mean, invstd, out=out)
    _close("out", torch.from_numpy(out.copy()), (xv - _bc(m, xv)) * _bc(1 / torch.sqrt(v + EPS),
                                                                     xv), torch.float64)
