"""kernlab's functions on torch tensors against torch's own, on every device this machine has:
the CPU tier always; CUDA where torch sees a GPU (with KERNLAB_REQUIRE_GPU=1 a missing GPU
fails the CUDA cases instead of skipping them)."""

import os

import pytest
import torch
import torch.nn.functional as F

import kernlab

REQUIRE_GPU = os.environ.get("KERNLAB_REQUIRE_GPU") == "1"


def devices():
    out = ["cpu"]
    if torch.cuda.is_available() or REQUIRE_GPU:
        out.append("cuda")
    return out


@pytest.fixture(params=devices())
def device(request):
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.fail("KERNLAB_REQUIRE_GPU=1 but torch sees no CUDA device")
    return request.param


# f64 references; a tolerance a dtype, relative to the output's scale.
TOL = {torch.float32: 2e-5, torch.bfloat16: 2e-2, torch.float16: 4e-3}
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
SHAPES = [(1, 1), (3, 37), (17, 1000), (2, 3, 129)]


def close(got, want, dtype):
    assert got.dtype == dtype and got.shape == want.shape
    assert not torch.isnan(got).any(), "NaN in kernlab's output"
    scale = want.abs().max().clamp_min(1.0)
    err = ((got.double() - want.double()).abs().max() / scale).item()
    assert err <= TOL[dtype], f"max error {err:.3g} over the scale, tolerance {TOL[dtype]}"


def draw(shape, dtype, device, seed=0, scale=2.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype).to(device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(device, dtype, shape, approximate):
    x = draw(shape, dtype, device)
    want = F.gelu(x.double(), approximate=approximate)
    close(kernlab.gelu(x, approximate), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_and_log_softmax(device, dtype, shape):
    x = draw(shape, dtype, device, seed=1)
    for dim in range(-1, len(shape) - 1):
        close(kernlab.softmax(x, dim), torch.softmax(x.double(), dim), dtype)
        close(kernlab.log_softmax(x, dim), torch.log_softmax(x.double(), dim), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_rms_norm(device, dtype, shape):
    x = draw(shape, dtype, device, seed=2)
    w = (1 + 0.25 * draw(shape[-1:], torch.float64, "cpu", seed=3, scale=1.0)).to(dtype)
    w = w.to(device)
    want = F.rms_norm(x.double(), shape[-1:], w.double(), 1e-6)
    close(kernlab.rms_norm(x, w, 1e-6), want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mnk", [(1, 1, 1), (5, 72, 64), (33, 130, 72)])
@pytest.mark.parametrize("activation", ["none", "gelu-tanh", "gelu-erf"])
def test_linear(device, dtype, mnk, activation):
    m, n, k = mnk
    x = draw((m, k), dtype, device, seed=4, scale=1.0)
    w = draw((n, k), dtype, device, seed=5, scale=k ** -0.5)
    b = draw((n,), dtype, device, seed=6, scale=0.5)
    z = F.linear(x.double(), w.double(), b.double())
    want = {"none": z, "gelu-tanh": F.gelu(z, approximate="tanh"), "gelu-erf": F.gelu(z)}
    close(kernlab.linear(x, w, b, activation), want[activation], dtype)
    if activation == "none":
        close(kernlab.linear(x, w), F.linear(x.double(), w.double()), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("gelu", ["none", "tanh"])
def test_mlp_forward(device, dtype, gelu):
    b, d, layers = 9, 64, 3
    x = draw((b, d), dtype, device, seed=7, scale=1.0)
    ws = [draw((d, d), dtype, device, seed=10 + i, scale=d ** -0.5) for i in range(layers)]
    bs = [draw((d,), dtype, device, seed=20 + i, scale=0.5) for i in range(layers)]
    h = x.double()
    for w, bias in zip(ws, bs):
        h = F.gelu(F.linear(h, w.double(), bias.double()), approximate=gelu)
    got = kernlab.mlp_forward(x, ws, bs, gelu)
    close(got, h, dtype)


def test_non_contiguous_inputs_and_empty_tensors(device):
    x = draw((8, 40), torch.float32, device)[:, ::2]
    assert not x.is_contiguous()
    close(kernlab.gelu(x), F.gelu(x.double()), torch.float32)
    close(kernlab.softmax(x.t(), 0), torch.softmax(x.t().double(), 0), torch.float32)
    # A batch-1 slice: contiguous, with torch's leftover stride on its size-1 dimension.
    h = draw((3, 5, 64), torch.float32, device)[:, -1, :][:1]
    assert h.is_contiguous() and h.stride(0) != 64
    w = draw((16, 64), torch.float32, device, seed=9, scale=0.125)
    close(kernlab.linear(h, w), F.linear(h.double(), w.double()), torch.float32)
    close(kernlab.gelu(h), F.gelu(h.double()), torch.float32)
    e = torch.empty((0, 4), device=device)
    assert kernlab.softmax(e).shape == (0, 4)
    assert kernlab.gelu(e).shape == (0, 4)


def test_variants_by_name(device):
    x = draw((4, 300), torch.float32, device)
    names = [v["name"] for v in kernlab.list_variants("softmax") if v["device"] == device
             and v["tier"] not in ("reference", "triton", "compiled")]
    assert names
    ran = 0
    for name in names:
        try:
            y = kernlab.softmax(x, variant=name)
        except ValueError as e:
            # A version made for other widths refuses this one, naming itself.
            assert f"softmax/{name}:" in str(e), e
            continue
        close(y, torch.softmax(x.double(), -1), torch.float32)
        ran += 1
    assert ran >= min(2, len(names))


def test_clear_errors_name_the_argument():
    x = torch.randn(3, 8)
    cases = [
        (TypeError, "x must be a torch.Tensor", lambda: kernlab.gelu([1.0])),
        (TypeError, "torch.int32", lambda: kernlab.gelu(torch.zeros(3, dtype=torch.int32))),
        (TypeError, "weight is torch.float64", lambda: kernlab.linear(x, torch.zeros(2, 8).double())),
        (TypeError, "weight is torch.bfloat16 but x is torch.float32",
         lambda: kernlab.rms_norm(x, torch.ones(8, dtype=torch.bfloat16))),
        (ValueError, "weight has shape (3,)", lambda: kernlab.rms_norm(x, torch.ones(3))),
        (ValueError, "dim 2 is out of range", lambda: kernlab.softmax(x, 2)),
        (TypeError, "dim must be an int", lambda: kernlab.softmax(x, 1.0)),
        (ValueError, "approximate must be", lambda: kernlab.gelu(x, "erf")),
        (ValueError, "activation must be one of", lambda: kernlab.linear(x, x, activation="relu")),
        (ValueError, "bias has shape", lambda: kernlab.linear(x, x, torch.ones(2))),
        (ValueError, "unknown variant 'v99'", lambda: kernlab.softmax(x, variant="v99")),
        (ValueError, "eps must be", lambda: kernlab.rms_norm(x, torch.ones(8), -1.0)),
        (ValueError, "layer 1 has weights", lambda: kernlab.mlp_forward(
            x, [torch.ones(8, 8), torch.ones(4, 8)], [torch.ones(8), torch.ones(8)])),
        (ValueError, "2 weights and 1 biases", lambda: kernlab.mlp_forward(
            x, [torch.ones(8, 8)] * 2, [torch.ones(8)])),
    ]
    for exc, words, call in cases:
        with pytest.raises(exc, match=None) as info:
            call()
        assert words in str(info.value), f"{exc.__name__}: {info.value}"


def test_autograd_matches_torch(device):
    x = torch.randn(4, 9, dtype=torch.float32, device=device, requires_grad=True)
    w = (torch.rand(9, device=device) + 0.5).requires_grad_()
    g = torch.randn(4, 9, device=device)
    pairs = [
        (lambda t: kernlab.gelu(t), lambda t: F.gelu(t)),
        (lambda t: kernlab.gelu(t, "tanh"), lambda t: F.gelu(t, approximate="tanh")),
        (lambda t: kernlab.softmax(t, 0), lambda t: torch.softmax(t, 0)),
        (lambda t: kernlab.log_softmax(t), lambda t: torch.log_softmax(t, -1)),
        (lambda t: kernlab.rms_norm(t, w, 1e-5), lambda t: F.rms_norm(t, (9,), w, 1e-5)),
    ]
    for mine, theirs in pairs:
        (gx,) = torch.autograd.grad(mine(x), x, g)
        (want,) = torch.autograd.grad(theirs(x), x, g)
        torch.testing.assert_close(gx, want, rtol=1e-5, atol=1e-6)
    (gw,) = torch.autograd.grad(kernlab.rms_norm(x, w, 1e-5), w, g)
    (want,) = torch.autograd.grad(F.rms_norm(x, (9,), w, 1e-5), w, g)
    torch.testing.assert_close(gw, want, rtol=1e-5, atol=1e-6)
    # linear (and its matmul form): every input's gradient, through the activation.
    lw = torch.randn(5, 9, device=device, requires_grad=True)
    lb = torch.randn(5, device=device, requires_grad=True)
    x3 = torch.randn(2, 4, 9, device=device, requires_grad=True)
    g3 = torch.randn(2, 4, 5, device=device)
    for act, theirs in [("gelu-erf", lambda z: F.gelu(z)),
                        ("gelu-tanh", lambda z: F.gelu(z, approximate="tanh")),
                        ("none", lambda z: z)]:
        mine = torch.autograd.grad(kernlab.linear(x3, lw, lb, act), (x3, lw, lb), g3)
        want = torch.autograd.grad(theirs(F.linear(x3, lw, lb)), (x3, lw, lb), g3)
        for a, b in zip(mine, want):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    mine = torch.autograd.grad(kernlab.linear(x3, lw), (x3, lw), g3)
    want = torch.autograd.grad(F.linear(x3, lw), (x3, lw), g3)
    for a, b in zip(mine, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_gradcheck(device):
    # torch.autograd.gradcheck in f32 (kernlab has no f64 kernels): the analytical gradients
    # against central differences of kernlab's own forward, at small shapes.
    g = torch.Generator().manual_seed(3)

    def leaf(*shape, scale=1.0, shift=0.0):
        t = torch.randn(*shape, generator=g) * scale + shift
        return t.to(device).requires_grad_()

    x, w = leaf(3, 8), leaf(8, scale=0.1, shift=1.0)
    lw, lb = leaf(4, 8, scale=0.3), leaf(4)
    cases = [
        (lambda t: kernlab.gelu(t), (x,)),
        (lambda t: kernlab.gelu(t, "tanh"), (x,)),
        (lambda t: kernlab.softmax(t, 0), (x,)),
        (lambda t: kernlab.log_softmax(t), (x,)),
        (lambda t, v: kernlab.rms_norm(t, v, 1e-5), (x, w)),
        (lambda t, a, b: kernlab.linear(t, a, b, "gelu-erf"), (x, lw, lb)),
        (lambda t, a, b: kernlab.linear(t, a, b, "gelu-tanh"), (x, lw, lb)),
        (lambda t, a: kernlab.linear(t, a), (x, lw)),
    ]
    for fn, inputs in cases:
        assert torch.autograd.gradcheck(fn, inputs, eps=1e-3, atol=2e-2, rtol=2e-2,
                                        fast_mode=False)


def test_the_custom_ops_gradients_are_the_eager_calls(device):
    # Eager calls run the implementation through an autograd.Function; torch.compile runs the
    # custom op, whose registered formula must give the same gradients.
    x = torch.randn(3, 2, 16, device=device, requires_grad=True)
    w = (torch.rand(16, device=device) + 0.5).requires_grad_()
    lw = (torch.randn(5, 16, device=device) / 4).requires_grad_()
    lb = torch.randn(5, device=device, requires_grad=True)
    ops = torch.ops.kernlab
    cases = [
        (lambda: kernlab.gelu(x, "tanh"), lambda: ops.gelu(x, "tanh", "auto"), (x,)),
        (lambda: kernlab.softmax(x, 1), lambda: ops.softmax(x, 1, False, "auto"), (x,)),
        (lambda: kernlab.log_softmax(x), lambda: ops.softmax(x, 2, True, "auto"), (x,)),
        (lambda: kernlab.rms_norm(x, w, 1e-5), lambda: ops.rms_norm(x, w, 1e-5, "auto"),
         (x, w)),
        (lambda: kernlab.linear(x, lw, lb, "gelu-erf"),
         lambda: ops.linear(x, lw, lb, "gelu-erf", "auto"), (x, lw, lb)),
    ]
    for eager, op, leaves in cases:
        a, b = eager(), op()
        assert a.grad_fn is not None and b.grad_fn is not None
        assert type(a.grad_fn) is not type(b.grad_fn)  # two paths, one formula
        g = torch.randn_like(a)
        for ga, gb in zip(torch.autograd.grad(a, leaves, g), torch.autograd.grad(b, leaves, g)):
            torch.testing.assert_close(ga, gb, rtol=1e-6, atol=1e-6)
    with torch.no_grad():  # no gradient wanted: no graph either way
        assert kernlab.gelu(x).grad_fn is None


def test_custom_ops_pass_opcheck():
    x = torch.randn(3, 16)
    w = torch.rand(16) + 0.5
    lin_w, lin_b = torch.randn(5, 16) / 4, torch.randn(5)
    ops = torch.ops.kernlab
    cases = [
        (ops.gelu.default, (x, "none", "auto")),
        (ops.softmax.default, (x, 1, False, "auto")),
        (ops.softmax.default, (x, 0, True, "auto")),
        (ops.rms_norm.default, (x, w, 1e-6, "auto")),
        (ops.linear.default, (x, lin_w, lin_b, "gelu-tanh", "auto")),
        (ops.linear.default, (x.clone().requires_grad_(), lin_w.clone().requires_grad_(),
                              lin_b, "gelu-erf", "auto")),
        (ops.mlp_forward.default, (x, [torch.randn(16, 16) / 4], [torch.randn(16)], "none",
                                   "auto")),
    ]
    for op, args in cases:
        torch.library.opcheck(op, args)


def test_torch_compile_traces_through_without_graph_breaks():
    def model(t, w):
        return kernlab.softmax(kernlab.rms_norm(kernlab.gelu(t), w) * 2.0)

    x, w = torch.randn(4, 32), torch.rand(32) + 0.5
    explained = torch._dynamo.explain(model)(x, w)
    assert explained.graph_break_count == 0, explained.break_reasons
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)
    torch.testing.assert_close(compiled(x, w), model(x, w))


def test_tools_from_python():
    names = {(v["op"], v["name"]) for v in kernlab.list_variants()}
    assert ("softmax", "v8_onchip") in names and ("gelu", "fused") in names
    assert all(v["op"] == "gelu" for v in kernlab.list_variants("gelu"))
    assert "softmax" in kernlab.cli(["list", "--op", "softmax"])
    with pytest.raises(RuntimeError):
        kernlab.cli(["bench", "nosuchop"])


def test_bench_returns_the_records():
    recs = kernlab.bench("gelu", [(64, 64), "3x5"], device="cpu", variants=["fused", "manual"],
                         frame=False, gelu="erf", rep_ms=5, warmup_ms=1)
    assert {(r["variant"], tuple(r["shape"])) for r in recs} == {
        ("fused", (64, 64)), ("manual", (64, 64)), ("fused", (3, 5)), ("manual", (3, 5))}
    for r in recs:
        assert r["status"] == "ok" and r["validated"] and r["median_ms"] > 0, r
        assert r["params"]["gelu"] == "erf"
    with pytest.raises(RuntimeError, match="unknown variant"):
        kernlab.bench("gelu", [(4, 4)], device="cpu", variants="v99", frame=False)


def test_inspect_reports_registers_and_spills():
    try:
        text = kernlab.inspect("gelu", "v2_vec16", arch="sm_90a", device="cpu")
    except RuntimeError as e:
        if os.environ.get("KERNLAB_REQUIRE_NVRTC") == "1" or "nvrtc" not in str(e).lower():
            raise
        pytest.skip(f"NVRTC is not loadable here: {e}")
    assert "gelu_v2" in text and "regs" in text and "spill" in text


def test_cuda_work_runs_on_torchs_current_stream():
    if not torch.cuda.is_available():
        if REQUIRE_GPU:
            pytest.fail("KERNLAB_REQUIRE_GPU=1 but torch sees no CUDA device")
        pytest.skip("no CUDA device")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        # Produced, consumed by kernlab and read back on the side stream, without a sync
        # between: only stream order makes the result right.
        x = torch.randn(512, 4096, device="cuda") * 3
        y = kernlab.softmax(x)
        got = (y.double() - torch.softmax(x.double(), -1)).abs().max()
    s.synchronize()
    assert got.item() < 1e-6


def test_a_gpt_block_trains_the_same_with_kernlabs_ops(device):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "examples" / "gpt_block.py"
    spec = importlib.util.spec_from_file_location("gpt_block", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ref, mine = mod.main(["--device", device, "--dtype", "f32", "--steps", "12", "--dim", "32",
                          "--seq", "16", "--batch", "4", "--heads", "2", "--vocab", "16"])
    assert ref[-1] < ref[0] - 0.1, "the block did not learn"
    assert max(abs(a - b) for a, b in zip(ref, mine)) < 1e-3
