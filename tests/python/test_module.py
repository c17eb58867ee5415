"""syncbn.torch in one process: the module, state_dict, convert/revert, patch, folding.

Oracles are torch's own modules: nn.BatchNorm2d (outside a process group our
module must equal it, training and eval, momentum 0.1 and None), torch's
convert_sync_batchnorm (parameter identity), and for folding the unfolded model
and torch.nn.utils.fusion.fuse_conv_bn_eval.
"""
import copy
import pickle

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import syncbn  # noqa: E402
import syncbn.torch as st  # noqa: E402


def _randomise(m, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for t in (m.weight, m.bias, m.running_mean):
            if t is not None:
                t.copy_(torch.randn(t.shape, generator=g, dtype=t.dtype))
        m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("channels_last", [False, True])
def test_outside_process_group_equals_batchnorm2d(momentum, channels_last):
    ours = st.SyncBatchNorm(4, momentum=momentum, dtype=torch.float64)
    ref = nn.BatchNorm2d(4, momentum=momentum, dtype=torch.float64)
    _randomise(ours)
    ref.load_state_dict(ours.state_dict())
    g = torch.Generator().manual_seed(1)
    for step in range(3):
        x = torch.randn(3, 4, 5, 6, generator=g, dtype=torch.float64) * 3 + 1
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        dy = torch.randn(x.shape, generator=g, dtype=torch.float64)
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        ours.zero_grad()
        ref.zero_grad()
        ya, yb = ours(xa), ref(xb)
        ya.backward(dy)
        yb.backward(dy)
        for a, b in ((ya, yb), (xa.grad, xb.grad), (ours.weight.grad, ref.weight.grad),
                     (ours.bias.grad, ref.bias.grad), (ours.running_mean, ref.running_mean),
                     (ours.running_var, ref.running_var)):
            assert torch.allclose(a, b, rtol=1e-10, atol=1e-10), (step, (a - b).abs().max())
        assert int(ours.num_batches_tracked) == int(ref.num_batches_tracked) == step + 1
        if channels_last:
            assert ya.is_contiguous(memory_format=torch.channels_last)
    ours.eval()
    ref.eval()
    x = torch.randn(2, 4, 3, 3, generator=g, dtype=torch.float64)
    assert torch.allclose(ours(x), ref(x), rtol=1e-12, atol=1e-12)


def test_autocast_style_bf16_input_with_fp32_params():
    ours = st.SyncBatchNorm(3)
    x = (torch.randn(4, 3, 5, 5) * 2 + 1).to(torch.bfloat16)
    y = ours(x)
    assert y.dtype == torch.bfloat16 and ours.running_mean.dtype == torch.float32
    want = nn.functional.batch_norm(x.double(), None, None, ours.weight.double(),
                                    ours.bias.double(), True)
    assert (y.double() - want).abs().max() <= 4 * 2.0 ** -8 * want.abs().max()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        conv = nn.Conv2d(3, 3, 1)
        y2 = ours(conv(x.float()))
    assert y2.dtype == torch.bfloat16


def test_state_dict_round_trip_with_torch_syncbatchnorm():
    theirs = nn.SyncBatchNorm(5, momentum=None)
    _randomise(theirs, 2)
    theirs.num_batches_tracked.fill_(7)
    ours = st.SyncBatchNorm(5, momentum=None)
    ours.load_state_dict(theirs.state_dict())
    assert list(ours.state_dict()) == list(theirs.state_dict())
    back = nn.SyncBatchNorm(5, momentum=None)
    back.load_state_dict(ours.state_dict())
    for k, v in theirs.state_dict().items():
        assert torch.equal(v, back.state_dict()[k]), k
    assert isinstance(ours, nn.modules.batchnorm._BatchNorm)


def _net():
    return nn.Sequential(nn.Conv1d(2, 3, 1), nn.BatchNorm1d(3),
                         nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4, momentum=None)),
                         nn.Conv3d(4, 2, 1), nn.BatchNorm3d(2, affine=False))


def test_convert_and_revert_share_tensors_as_torch_does():
    net = _net()
    for m in net.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            _randomise(m) if m.affine else None
    bns = [m for m in net.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    tensors = [(m.weight, m.bias, m.running_mean, m.running_var, m.num_batches_tracked)
               for m in bns]
    net.eval()
    conv = st.convert_sync_batchnorm(net)
    syncs = [m for m in conv.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    assert all(type(m) is st.SyncBatchNorm for m in syncs) and len(syncs) == 3
    torch_conv = nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(_net()))
    assert len([m for m in torch_conv.modules() if type(m) is nn.SyncBatchNorm]) == 3
    for m, ts in zip(syncs, tensors):
        got = (m.weight, m.bias, m.running_mean, m.running_var, m.num_batches_tracked)
        assert all(a is b for a, b in zip(got, ts)), "convert must share the same tensors"
        assert not m.training
    assert syncs[1].momentum is None and not syncs[2].affine
    back = st.revert_sync_batchnorm(conv)
    plain = [m for m in back.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    assert [type(m) for m in plain] == [nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d]
    for m, ts in zip(plain, tensors):
        got = (m.weight, m.bias, m.running_mean, m.running_var, m.num_batches_tracked)
        assert all(a is b for a, b in zip(got, ts)), "revert must share the same tensors"
    # torch's SyncBatchNorm built directly: its class is unknown until it sees input
    with pytest.raises(ValueError, match="has seen no input"):
        st.revert_sync_batchnorm(st.convert_sync_batchnorm(nn.SyncBatchNorm(2)))


def test_revert_uses_the_rank_of_seen_inputs():
    for shape, cls in (((4, 2), nn.BatchNorm1d), ((4, 2, 3), nn.BatchNorm1d),
                       ((4, 2, 3, 3), nn.BatchNorm2d), ((4, 2, 3, 3, 3), nn.BatchNorm3d)):
        m = st.SyncBatchNorm(2)
        m(torch.randn(shape))
        assert type(st.revert_sync_batchnorm(copy.deepcopy(m))) is cls
    m = st.SyncBatchNorm(2)
    m(torch.randn(4, 2, 3, 3))
    assert type(st.revert_sync_batchnorm(pickle.loads(pickle.dumps(m)))) is nn.BatchNorm2d


def test_bad_input_raises_clearly_and_leaves_running_stats():
    m = st.SyncBatchNorm(3)
    _randomise(m)
    snap = [t.clone() for t in (m.running_mean, m.running_var, m.num_batches_tracked)]
    cases = [(torch.randn(6), "2D"), (torch.randn(2, 4, 3), "weight has shape [3]"),
             (torch.randn(2, 3, 3, dtype=torch.float64), "mismatched dtypes"),
             (torch.randint(0, 5, (2, 3, 3)), "dtype"),
             (torch.empty(2, 3, 3, device="meta"), "meta"),
             (torch.randn(1, 3), "more than 1 value per channel")]
    for x, words in cases:
        with pytest.raises(syncbn.SyncBNError, match=words.replace("[", r"\[").replace("]", r"\]")):
            m(x)
        now = (m.running_mean, m.running_var, m.num_batches_tracked)
        assert all(torch.equal(a, b) for a, b in zip(snap, now)), words
    with pytest.raises(ValueError):  # torch's class for a bad input
        m(torch.randn(6))


# torch 1.x's SyncBatchNorm.forward refuses any input not on CUDA, process group or not;
# torch 2.x checks the device only when it syncs (training in an initialised process
# group) and otherwise runs F.batch_norm, on CPU and meta tensors alike.
TORCH_MAJOR = int(torch.__version__.split(".")[0])


def _torch_forward_outside_a_group(m, x):
    """torch's own SyncBatchNorm forward of x outside a process group, as this torch does it:
    1.x raises its "GPU" ValueError; 2.x returns plain batch norm (checked) on x's device."""
    if TORCH_MAJOR < 2:
        with pytest.raises(ValueError, match="GPU"):
            m(x)
        return
    y = m(x)
    assert y.device == x.device and y.shape == x.shape
    if x.device.type == "cpu":
        want = nn.functional.batch_norm(x, None, None, m.weight, m.bias, True)
        assert torch.allclose(y, want, atol=1e-5)


def test_patch_routes_cpu_to_syncbn_and_other_devices_to_torch():
    m = nn.SyncBatchNorm(3)
    x = torch.randn(4, 3, 2, 2)
    _torch_forward_outside_a_group(m, x)
    st.patch()
    try:
        assert st.is_patched()
        y = m(x)
        want = nn.functional.batch_norm(x, None, None, m.weight, m.bias, True)
        assert torch.allclose(y, want, atol=1e-5)
        # meta stands in for CUDA: torch's own forward, whatever that does in this version
        _torch_forward_outside_a_group(m, torch.empty(4, 3, 2, 2, device="meta"))
        converted = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm2d(3)))
        assert type(converted[0]) is nn.SyncBatchNorm
        assert type(st.revert_sync_batchnorm(converted)[0]) is nn.BatchNorm2d
    finally:
        st.unpatch()
    assert not st.is_patched()
    _torch_forward_outside_a_group(m, x)


def _conv_bn_model(bn_cls):
    torch.manual_seed(5)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), bn_cls(8), nn.ReLU(),
                          nn.Sequential(nn.Conv2d(8, 4, 3, bias=False), bn_cls(4)))
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            _randomise(m, 9)
    return model.eval()


@pytest.mark.parametrize("bn_cls", [nn.BatchNorm2d, nn.SyncBatchNorm, st.SyncBatchNorm])
def test_fold_batchnorm_equals_unfolded_and_fuse_conv_bn_eval(bn_cls):
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    model = _conv_bn_model(bn_cls)
    x = torch.randn(2, 3, 7, 7)
    st.patch()  # torch's SyncBatchNorm runs on CPU only when patched
    try:
        want = model(x)
    finally:
        st.unpatch()
    fused_ref = [fuse_conv_bn_eval(copy.deepcopy(model[0]), model[1]),
                 fuse_conv_bn_eval(copy.deepcopy(model[3][0]), model[3][1])]
    folded = st.fold_batchnorm(model)
    assert isinstance(folded[1], nn.Identity) and isinstance(folded[3][1], nn.Identity)
    got = folded(x)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5 * want.abs().max().item())
    for conv, ref in zip((folded[0], folded[3][0]), fused_ref):
        assert torch.allclose(conv.weight, ref.weight, rtol=1e-5, atol=1e-7)
        assert torch.allclose(conv.bias, ref.bias, rtol=1e-5, atol=1e-6)


def test_fold_batchnorm_refuses_a_training_model():
    with pytest.raises(ValueError, match="eval"):
        st.fold_batchnorm(_conv_bn_model(nn.BatchNorm2d).train())


def _neg_bit(t):
    """A tensor equal to t carrying torch's negative bit (memory holds -t; see test_ops)."""
    v = torch.complex(torch.zeros_like(t), -t).conj().imag
    assert v.is_neg() and torch.equal(v, t)
    return v


def test_negative_bit_input_and_grad_equal_batchnorm2d():
    """Issue 25: a negative-bit input gave y with the sign flipped and a corrupted running_mean."""
    ours = st.SyncBatchNorm(2, dtype=torch.float64)
    ref = nn.BatchNorm2d(2, dtype=torch.float64)
    _randomise(ours, 3)
    ref.load_state_dict(ours.state_dict())
    g = torch.Generator().manual_seed(4)
    x = torch.randn(3, 2, 4, 4, generator=g, dtype=torch.float64) - 10
    dy = torch.randn(x.shape, generator=g, dtype=torch.float64)
    xa = _neg_bit(x).requires_grad_()
    xb = x.clone().requires_grad_()
    ya, yb = ours(xa), ref(xb)
    ya.backward(_neg_bit(dy))
    yb.backward(dy)
    for a, b in ((ya, yb), (xa.grad, xb.grad), (ours.weight.grad, ref.weight.grad),
                 (ours.bias.grad, ref.bias.grad), (ours.running_mean, ref.running_mean),
                 (ours.running_var, ref.running_var)):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-10), (a - b).abs().max()
    ours.eval()
    ref.eval()
    assert torch.allclose(ours(_neg_bit(x)), ref(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["running_mean", "running_var", "num_batches_tracked"])
def test_negative_bit_buffers_are_refused_in_training(name):
    """Buffers the layer writes in place cannot carry the negative bit; refused, left as they were
    (in eval the running stats are only read, so they are read negated)."""
    m = st.SyncBatchNorm(3, dtype=torch.float64)
    _randomise(m)
    t = getattr(m, name)
    neg = torch._neg_view(-t) if name == "num_batches_tracked" else _neg_bit(t.clone())
    setattr(m, name, neg)
    before = [b.clone() for b in m.buffers()]
    x = torch.randn(4, 3, 2, dtype=torch.float64)
    with pytest.raises(syncbn.BadInputError, match=name + " .*negative bit"):
        m(x)
    assert all(torch.equal(a, b) for a, b in zip(before, m.buffers()))
    if name != "num_batches_tracked":
        m.eval()
        ref = nn.BatchNorm1d(3, dtype=torch.float64).eval()
        ref.load_state_dict(m.state_dict())
        assert torch.allclose(m(x), ref(x), rtol=1e-12, atol=1e-12)


def _functional_call():
    """torch.func.functional_call (torch 2) or torch.nn.utils.stateless.functional_call (1.13)."""
    func = getattr(torch, "func", None)
    if func is not None and hasattr(func, "functional_call"):
        return func.functional_call
    from torch.nn.utils import stateless
    return stateless.functional_call


def _penalty_grads(bn, seed=11):
    """Parameter gradients of a gradient penalty (create_graph=True, then backward through the
    gradient) of conv -> bn -> tanh -> conv, bn as given (its mode and state kept)."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Conv2d(2, 3, 3, dtype=torch.float64), bn, nn.Tanh(),
                          nn.Conv2d(3, 2, 1, dtype=torch.float64))
    x = torch.randn(4, 2, 6, 6, dtype=torch.float64, requires_grad=True)
    loss = model(x).pow(2).sum()
    gx, = torch.autograd.grad(loss, x, create_graph=True)
    (gx.pow(2).sum() + loss).backward()
    return [(name, p.grad) for name, p in model.named_parameters()]


def test_eval_double_backward_equals_batchnorm2d():
    """Issue 25: backward's grads had no autograd graph, so a gradient penalty through an eval
    layer silently lost its second-order terms (conv.weight.grad off by up to 1.2e2)."""
    ours = st.SyncBatchNorm(3, dtype=torch.float64)
    _randomise(ours, 12)
    ref = nn.BatchNorm2d(3, dtype=torch.float64)
    ref.load_state_dict(ours.state_dict())
    got, want = _penalty_grads(ours.eval()), _penalty_grads(ref.eval())
    for (name, a), (_, b) in zip(got, want):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-10), (name, (a - b).abs().max())


@pytest.mark.parametrize("channels_last", [False, True])
def test_eval_gradgradcheck(channels_last):
    m = st.SyncBatchNorm(3, dtype=torch.float64)
    _randomise(m, 13)
    m.eval()
    g = torch.Generator().manual_seed(14)
    x = torch.randn(2, 3, 3, 2, generator=g, dtype=torch.float64)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    w = m.weight.detach().clone().requires_grad_()
    b = m.bias.detach().clone().requires_grad_()
    call = _functional_call()

    def fn(x, w, b):
        return call(m, {"weight": w, "bias": b}, (x,))
    inputs = (x.requires_grad_(), w, b)
    assert torch.autograd.gradcheck(fn, inputs)
    assert torch.autograd.gradgradcheck(fn, inputs)


@pytest.mark.parametrize("track", [True, False])
def test_training_double_backward_raises_and_first_order_stays(track):
    """With batch statistics there is no second-order formula: differentiating the gradient
    raises (as torch's once_differentiable does, also when the incoming gradient is a constant),
    and the first-order gradients under create_graph=True are those of BatchNorm2d."""
    ours = st.SyncBatchNorm(3, track_running_stats=track, dtype=torch.float64)
    ref = nn.BatchNorm2d(3, track_running_stats=track, dtype=torch.float64)
    _randomise(ours, 15) if track else None
    ref.load_state_dict(ours.state_dict())
    if not track:
        ours.eval()  # eval without running stats normalises with the batch's statistics
        ref.eval()
    g = torch.Generator().manual_seed(16)
    x = torch.randn(4, 3, 3, 3, generator=g, dtype=torch.float64)
    c = torch.randn(x.shape, generator=g, dtype=torch.float64)  # a constant incoming gradient
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ga = torch.autograd.grad((ours(xa) * c).sum(), (xa, ours.weight), create_graph=True)
    gb = torch.autograd.grad((ref(xb) * c).sum(), (xb, ref.weight), create_graph=True)
    for a, b in zip(ga, gb):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-10)
    for grad in ga:
        with pytest.raises(RuntimeError, match="double backward"):
            grad.pow(2).sum().backward(retain_graph=True)
    w = ours.weight.detach().clone().requires_grad_()

    def fn(x, w):
        return _functional_call()(ours, {"weight": w}, (x,))
    with pytest.raises(RuntimeError, match="double backward"):
        torch.autograd.gradgradcheck(fn, (x.clone().requires_grad_(), w))


@pytest.mark.parametrize("shape", [(1, 3), (1, 3, 1, 1), (1, 3, 1)])
@pytest.mark.parametrize("mode", ["train", "eval_without_running_stats"])
def test_one_sample_per_channel_raises_torchs_value_error(shape, mode):
    """Outside a process group our module raises what torch's BatchNorm raises, word for word."""
    cls = {2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d}[len(shape)]
    track = mode == "train"
    ours, ref = st.SyncBatchNorm(3, track_running_stats=track), cls(3, track_running_stats=track)
    if not track:
        ours.eval()
        ref.eval()
    x = torch.randn(shape)
    with pytest.raises(ValueError) as theirs:
        ref(x)
    with pytest.raises(ValueError) as got:
        ours(x)
    assert str(theirs.value) in str(got.value), (str(got.value), str(theirs.value))


@pytest.mark.parametrize("name", ["running_mean", "running_var"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_eval_backward_refuses_running_stats_changed_since_forward(name, create_graph):
    """An eval output's gradient uses the running statistics of its forward. Changed in place
    before backward (load_state_dict, a buffer broadcast), they would give a wrong gradient;
    torch's BatchNorm raises, and so does ours."""
    for cls in (nn.BatchNorm1d, st.SyncBatchNorm):
        m = cls(3, dtype=torch.float64).eval()
        x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
        y = m(x)
        with torch.no_grad():
            getattr(m, name).mul_(4)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            torch.autograd.grad(y.sum(), x, create_graph=create_graph)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_eval_without_grad_is_the_same_call(dtype, channels_last):
    """Eval with running stats under torch.no_grad() (and torch.inference_mode()) skips the
    autograd Function and the save outputs: the same bits as eval with grad, the same as
    BatchNorm2d within its rounding, no graph, and bad input still refused."""
    m = st.SyncBatchNorm(5).eval()
    if dtype == torch.float64:
        m.double()  # fp64 input takes fp64 parameters (bf16 takes fp32 ones, as torch)
    _randomise(m, seed=4)
    g = torch.Generator().manual_seed(9)
    x = torch.randn(3, 5, 4, 6, generator=g).to(dtype) * 3 + 1
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        fast = m(x)
    with torch.inference_mode():
        inference = m(x)
    graph = m(x.clone().requires_grad_(True))
    assert graph.requires_grad and not fast.requires_grad
    assert torch.equal(fast, graph.detach()) and torch.equal(inference, fast)
    assert fast.is_contiguous(memory_format=torch.channels_last) == channels_last
    ref = nn.BatchNorm2d(5).double().eval()
    ref.load_state_dict(m.state_dict())
    with torch.no_grad():
        want = ref(x.double())
    tol = 1e-12 if dtype == torch.float64 else 1e-5 if dtype == torch.float32 else 2e-2
    assert torch.allclose(fast.double(), want.double(), rtol=tol, atol=tol)
    with torch.no_grad(), pytest.raises(syncbn.BadInputError, match="expected at least 2D"):
        m(torch.randn(5))
