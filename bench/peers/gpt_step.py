"""bench/peers/gpt_step.py - the example trainer's training step written as a PyTorch user would
write it (eager, fp32, CPU): the peer of bench/train_bench.c. Imported by peers.py, which serves
its keys (gptstep/<L>x<d>x<H>x<V>x<T>x<B>/<job>); not a script of its own.

The model is examples/gpt's (model.h, cpu.c), parameter for parameter and matmul for matmul:
token embedding wte (V x d) and an untied LM head (V x d); per layer wq, wk, wv, wo (d x d),
w_gate, w_up (f x d), w_down (d x f), no biases, f = 8/3 d rounded to a multiple of 8 (model.c);
pre-norm RMSNorm without gain (eps 1e-6); q, k, v and gate, up as one F.linear each, as a PyTorch
user writes them (the trainer fuses q|k|v into one n x 3d GEMM and gate|up into one n x 2f: the
same flops; here the fused form, F.linear on the concatenated weights, which keeps the 42 block
matrices separate parameters as the trainer's optimizer sees them, measured ~5 % slower over the
whole forward + backward on this machine, so the peer runs its faster form); QK-RMSNorm per head
(no gain), then RoPE on adjacent pairs (2i, 2i+1) by pos * 10000^(-2i/head_dim); causal
attention through F.scaled_dot_product_attention(is_causal=True) (scale 1/sqrt(head_dim), as the
trainer's); SwiGLU down(silu(gate) * up); a final RMSNorm; cross-entropy averaged over tokens.
Weights ~ N(0, 0.02^2), tokens uniform at random (train_bench's data are random too).

Jobs:
  fb      zero_grad() (PyTorch's default: the grads are set to None) + forward + backward
  muon32  the Muon update of the 42 block matrices, torch.optim.Muon's rule (EMA momentum 0.95
          by lerp, Nesterov, decoupled weight decay 0.1, lr * sqrt(max(1, rows/cols)), Jordan x 5
          by its addmm form) with Newton-Schulz in fp32: the peer of the trainer's default update
          (one muon_step_layers_ws call, --ns-precision fp32)
  muon    torch.optim.Muon itself (torch >= 2.9), as shipped: its Newton-Schulz is hard-coded to
          bf16 (ns_coefficients, ns_steps 5 and adjust_lr 'original' are its defaults); the peer
          of --ns-precision bf16. NA where torch has no torch.optim.Muon.
  step    the trainer's whole step: fb, clip_grad_norm_(1.0) over every parameter, muon32 on the
          block matrices, AdamW on the embedding (lr 4e-3, betas (0.9, 0.95), eps 1e-10, wd 0)
          and on the head (betas (0.9, 0.999), eps 1e-10, wd 0.1): optim.h's default recipe
          (head arm A = AdamW), without the schedule (a scalar)
  fbcompiled  fb with the forward through torch.compile (inductor, default mode; compiled on its
          first run, which then takes a minute): not what the issue compares (eager), a bonus that
          train_bench runs only with --compiled
The rates are small (as train_bench's: the weights barely move over the reps); they do not change
the work.
"""
import math

JORDAN = (3.4445, -4.7750, 2.0315)
LR = 1e-4


def mlp_width(d):
    """model.c: 8/3 d rounded to the nearest multiple of 8, at least 8."""
    return max(8, (d * 8 // 3 + 4) // 8 * 8)


def build(torch, L, d, H, V, T, B, seed=1):
    """The model's parameters, a forward + backward closure and the optimizers, in a dict."""
    F = torch.nn.functional
    g = torch.Generator().manual_seed(seed)
    f, hd = mlp_width(d), d // H

    def param(r, c):
        return torch.nn.Parameter(torch.randn(r, c, generator=g) * 0.02)

    wte = param(V, d)
    layers = [[param(d, d), param(d, d), param(d, d), param(d, d), param(f, d), param(f, d), param(d, f)]
              for _ in range(L)]
    head = param(V, d)
    blocks = [w for ly in layers for w in ly]
    allp = [wte] + blocks + [head]
    # RoPE tables as cpu.c's gpt_rope_tables: angle = pos * 10000^(-2i/hd), in double
    inv = torch.tensor([10000.0 ** (-2.0 * i / hd) for i in range(hd // 2)], dtype=torch.float64)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = ang.cos().float(), ang.sin().float()  # T x hd/2
    idx = torch.randint(0, V, (B, T), generator=g)
    tgt = torch.randint(0, V, (B, T), generator=g)

    def rope(x):  # x: B x T x H x hd; adjacent pairs (2i, 2i+1)
        x0, x1 = x[..., 0::2], x[..., 1::2]
        c, s = cos[:, None, :], sin[:, None, :]
        return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2)

    def forward():
        x = F.embedding(idx, wte)
        for wq, wk, wv, wo, wg, wu, wd in layers:
            xn = F.rms_norm(x, (d,), eps=1e-6)
            q, k, v = F.linear(xn, wq), F.linear(xn, wk), F.linear(xn, wv)
            q = rope(F.rms_norm(q.view(B, T, H, hd), (hd,), eps=1e-6))
            k = rope(F.rms_norm(k.view(B, T, H, hd), (hd,), eps=1e-6))
            v = v.view(B, T, H, hd)
            y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                               is_causal=True)
            x = x + F.linear(y.transpose(1, 2).reshape(B, T, d), wo)
            xn = F.rms_norm(x, (d,), eps=1e-6)
            gate, up = F.linear(xn, wg), F.linear(xn, wu)
            x = x + F.linear(F.silu(gate) * up, wd)
        logits = F.linear(F.rms_norm(x, (d,), eps=1e-6), head)
        return F.cross_entropy(logits.view(-1, V), tgt.view(-1))

    def zero_grad():
        for p in allp:
            p.grad = None

    def fb():
        zero_grad()
        forward().backward()

    compiled = []

    def fbcompiled():
        if not compiled:
            compiled.append(torch.compile(forward))
        zero_grad()
        compiled[0]().backward()

    bufs = [torch.zeros_like(w) for w in blocks]

    @torch.no_grad()
    def muon32():
        """torch.optim.Muon's _single_tensor_muon with fp32 Newton-Schulz (its own is bf16)."""
        a, b, c = JORDAN
        wd = 0.1
        for w, buf in zip(blocks, bufs):
            grad = w.grad
            buf.lerp_(grad, 1 - 0.95)
            X = grad.lerp(buf, 0.95)  # Nesterov
            tall = X.size(0) > X.size(1)
            if tall:
                X = X.T
            X = X / X.norm().clamp(min=1e-7)
            for _ in range(5):
                A = X @ X.T
                X = torch.addmm(X, torch.addmm(A, A, A, beta=b, alpha=c), X, beta=a)
            if tall:
                X = X.T
            w.mul_(1 - LR * wd)
            w.add_(X, alpha=-LR * math.sqrt(max(1, w.size(0) / w.size(1))))

    muon_opt = None
    if hasattr(torch.optim, "Muon"):
        muon_opt = torch.optim.Muon(blocks, lr=LR)  # weight_decay 0.1, momentum 0.95, nesterov: its defaults
    emb_opt = torch.optim.AdamW([wte], lr=4e-3, betas=(0.9, 0.95), eps=1e-10, weight_decay=0.0)
    head_opt = torch.optim.AdamW([head], lr=4e-3, betas=(0.9, 0.999), eps=1e-10, weight_decay=0.1)

    def step():
        fb()
        torch.nn.utils.clip_grad_norm_(allp, 1.0)
        muon32()
        emb_opt.step()
        head_opt.step()

    fb()  # gradients present before any update job runs
    return {"fb": fb, "fbcompiled": fbcompiled, "muon32": muon32, "muon": muon_opt.step if muon_opt is not None else None, "step": step,
            "params": allp, "data": (idx, tgt), "forward": forward}


def make_job(key, torch, cache):
    """peers.py's hook for gptstep/<L>x<d>x<H>x<V>x<T>x<B>/<fb|muon32|muon|step|fbcompiled>: a callable
    or None."""
    parts = key.split("/")
    if torch is None or len(parts) != 3:
        return None
    try:
        L, d, H, V, T, B = (int(v) for v in parts[1].split("x"))
    except ValueError:
        return None
    if parts[2] not in ("fb", "muon32", "muon", "step", "fbcompiled") or H < 1 or d % H or (d // H) % 2:
        return None
    ck = ("gptstep", parts[1])
    if ck not in cache:
        cache[ck] = build(torch, L, d, H, V, T, B)
    return cache[ck][parts[2]]
