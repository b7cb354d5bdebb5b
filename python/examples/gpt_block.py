"""A small GPT-style block trained twice from the same weights and data: once with PyTorch's
ops, once with kernlab's swapped in (rms_norm, the attention scores' softmax, the MLP's fused
linear + GeLU and its second linear). Prints both loss curves' distance and each run's time a
step.

    python python/examples/gpt_block.py                     # CUDA if there is one, bf16
    python python/examples/gpt_block.py --device cpu --dtype f32 --steps 20 --dim 64

The task: predict the next token of random sequences drawn from a fixed random bigram table, so
the loss falls from ln(vocab) towards the table's entropy.
"""

import argparse
import math
import time

import torch
import torch.nn.functional as F

import kernlab

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


class Ops:
    """The block's ops: PyTorch's, or kernlab's."""

    def __init__(self, use_kernlab):
        self.k = use_kernlab

    def rms_norm(self, x, w):
        if self.k:
            return kernlab.rms_norm(x, w, 1e-6)
        return F.rms_norm(x, (x.shape[-1],), w, 1e-6)

    def softmax(self, s):
        return kernlab.softmax(s) if self.k else torch.softmax(s, -1)

    def linear_gelu(self, x, w, b):
        if self.k:
            return kernlab.linear(x, w, b, "gelu-tanh")
        return F.gelu(F.linear(x, w, b), approximate="tanh")

    def linear(self, x, w, b):
        return kernlab.linear(x, w, b) if self.k else F.linear(x, w, b)


def init_params(vocab, dim, seq, gen, device, dtype):
    def p(*shape, scale):
        t = torch.randn(*shape, generator=gen, dtype=torch.float32) * scale
        return t.to(device=device, dtype=dtype).requires_grad_()

    d = dim
    return {
        "emb": p(vocab, d, scale=0.02), "pos": p(seq, d, scale=0.02),
        "n1": (torch.ones(d, device=device, dtype=dtype)).requires_grad_(),
        "qkv_w": p(3 * d, d, scale=d ** -0.5), "qkv_b": p(3 * d, scale=0.0),
        "o_w": p(d, d, scale=d ** -0.5), "o_b": p(d, scale=0.0),
        "n2": (torch.ones(d, device=device, dtype=dtype)).requires_grad_(),
        "fc_w": p(4 * d, d, scale=d ** -0.5), "fc_b": p(4 * d, scale=0.0),
        "proj_w": p(d, 4 * d, scale=(4 * d) ** -0.5), "proj_b": p(d, scale=0.0),
        "nf": (torch.ones(d, device=device, dtype=dtype)).requires_grad_(),
    }


def forward(ops, P, tokens, heads):
    b, t = tokens.shape
    d = P["emb"].shape[1]
    x = P["emb"][tokens] + P["pos"][:t]
    h = ops.rms_norm(x, P["n1"])
    q, k, v = ops.linear(h, P["qkv_w"], P["qkv_b"]).split(d, dim=-1)
    q, k, v = (z.reshape(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
    scores = (q @ k.transpose(-1, -2)) * (d // heads) ** -0.5
    causal = torch.ones(t, t, dtype=torch.bool, device=tokens.device).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    att = ops.softmax(scores) @ v
    x = x + ops.linear(att.transpose(1, 2).reshape(b, t, d), P["o_w"], P["o_b"])
    h = ops.rms_norm(x, P["n2"])
    x = x + ops.linear(ops.linear_gelu(h, P["fc_w"], P["fc_b"]), P["proj_w"], P["proj_b"])
    x = ops.rms_norm(x, P["nf"])
    return x @ P["emb"].t()


def batches(vocab, seq, batch, steps, gen, device):
    table = torch.softmax(torch.randn(vocab, vocab, generator=gen) * 3, -1)
    for _ in range(steps):
        first = torch.randint(vocab, (batch, 1), generator=gen)
        toks = [first]
        for _ in range(seq):
            toks.append(torch.multinomial(table[toks[-1][:, 0]], 1, generator=gen))
        toks = torch.cat(toks, 1).to(device)
        yield toks[:, :-1], toks[:, 1:]


def train(use_kernlab, a, device, dtype):
    gen = torch.Generator().manual_seed(a.seed)
    P = init_params(a.vocab, a.dim, a.seq, gen, device, dtype)
    opt = torch.optim.AdamW(P.values(), lr=a.lr)
    ops = Ops(use_kernlab)
    losses, times = [], []
    for inp, tgt in batches(a.vocab, a.seq, a.batch, a.steps, gen, device):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        logits = forward(ops, P, inp, a.heads)
        loss = F.cross_entropy(logits.float().reshape(-1, a.vocab), tgt.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())  # synchronises: the step's time includes all its work
        times.append(time.perf_counter() - t0)
    return losses, times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", choices=DTYPES, default="bf16")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.dim % a.heads:
        p.error("--dim must be a multiple of --heads")
    device, dtype = torch.device(a.device), DTYPES[a.dtype]
    ref, ref_t = train(False, a, device, dtype)
    mine, mine_t = train(True, a, device, dtype)
    gap = max(abs(x - y) for x, y in zip(ref, mine))
    skip = min(5, len(ref_t) - 1)  # the first steps compile and warm up

    def per_step(ts):
        return 1e3 * sorted(ts[skip:])[len(ts[skip:]) // 2]

    print(f"{a.steps} steps, {a.dtype}, {device}: loss {ref[0]:.3f} -> torch {ref[-1]:.4f}, "
          f"kernlab {mine[-1]:.4f} (ln vocab {math.log(a.vocab):.3f})")
    print(f"largest loss difference over the run: {gap:.4f}")
    print(f"median ms a step: torch {per_step(ref_t):.2f}, kernlab {per_step(mine_t):.2f}")
    return ref, mine


if __name__ == "__main__":
    main()
