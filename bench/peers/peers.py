#!/usr/bin/env python3
"""bench/peers/peers.py - what a user would run instead: the same math as bench/bench.c, written
the way the reference implementations write it (numpy float32; PyTorch CPU fp32 when installed).

    pip install numpy          # required for the peers; never needed by the library or its tests
    pip install torch          # optional (plain PyPI wheel; CPU is used)

bench/bench.c starts this script as a server (`--serve`, one process per thread count, with
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS set) and interleaves it with its own runs rep by rep, so
the load of a shared machine falls on both alike. Protocol, one line each way:
    -> run <key>        <- T <seconds>        (the first run of a key also builds its data)
    -> warm <key>       <- T <seconds>        (one untimed run, then the timed one)
    -> free             <- OK                 (drop all data)
    -> quit
Keys: ns/<R>x<C>/<lib>, rownorm/<V>x<d>/<default|compat>/<lib>, diam/<V>x<d>/<lib>; lib is numpy
or torch (ns also torchbf16: the reference's bf16 iteration); gptstep/<L>x<d>x<H>x<V>x<T>x<B>/<job>
(torch only; job fb, muon32, muon or step: the example trainer's training step, bench/peers/gpt_step.py,
served to bench/train_bench.c). On start it prints "HELLO numpy=<v> torch=<v|none>" (or "NONUMPY" and exits).
Standalone timing (medians of --reps after a warm-up):
    python3 bench/peers/peers.py --section ns|nsbf16|rownorm|diam|gptstep --threads 1|2 --reps 5
"""
import argparse
import os
import sys
import time

try:
    import numpy as np
except ImportError:
    print("NONUMPY" if "--serve" in sys.argv else "PEERINFO peers: skipped (numpy missing)", flush=True)
    sys.exit(0)
try:
    import torch
except ImportError:
    torch = None


def bench(fns, reps):
    """fns: list of (key, callable). One warm-up each, then reps rounds, rotating the order."""
    for _, f in fns:
        f()
    times = {k: [] for k, _ in fns}
    for r in range(reps):
        for q in range(len(fns)):
            k, f = fns[(r + q) % len(fns)]
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    for k, ts in times.items():
        print("PEER %s %.6f" % (k, sorted(ts)[len(ts) // 2] if len(ts) % 2 else
                                0.5 * (sorted(ts)[len(ts) // 2 - 1] + sorted(ts)[len(ts) // 2])), flush=True)


# ---- Newton-Schulz, Jordan x 5, as matmuls (the reference zeropower_via_newtonschulz5) -------
JORDAN = (3.4445, -4.7750, 2.0315)


def ns_numpy(G, steps=5):
    a, b, c = JORDAN
    X = G / (np.linalg.norm(G) + np.float32(1e-7))
    tall = X.shape[0] > X.shape[1]
    if tall:
        X = X.T
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * (A @ A)
        X = a * X + B @ X
    if tall:
        X = X.T
    return X


def ns_torch(G, steps=5, bf16=False):
    """bf16: the reference's own precision (KellerJordan/Muon zeropower_via_newtonschulz5: X is
    G.bfloat16(), normalised and iterated in bf16)."""
    a, b, c = JORDAN
    X = G.bfloat16() if bf16 else G
    tall = G.size(0) > G.size(1)
    if tall:
        X = X.mT
    X = X / (X.norm() + 1e-7)
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * A @ A
        X = a * X + B @ X
    if tall:
        X = X.mT
    return X


# ---- RowNorm step as tensor ops (SPEC 1.5; compat = the authors' released rule) --------------
BETA, LR, EPS = 0.95, 3.2e-3, 1e-8


class RowNormNumpy:
    def __init__(self, V, d):
        self.B = np.zeros((V, d), np.float32)
        self.t = 0

    def step(self, W, G, proj):
        self.t += 1
        self.B *= np.float32(BETA)
        self.B += np.float32(1 - BETA) * G
        bc = np.float32(1 - BETA ** self.t)
        if proj:
            Bh = self.B / bc
            Bh = Bh - Bh.mean(axis=0, keepdims=True)
            R = Bh / (np.linalg.norm(Bh, axis=1, keepdims=True) + np.float32(EPS))
            R -= R.mean(axis=0, keepdims=True)
        else:
            R = self.B / (np.linalg.norm(self.B, axis=1, keepdims=True) + np.float32(EPS) * bc)
        W -= np.float32(LR) * R


class RowNormTorch:
    def __init__(self, V, d):
        self.B = torch.zeros(V, d)
        self.t = 0

    def step(self, W, G, proj):  # no @torch.no_grad(): the class must define without torch
        with torch.no_grad():
            self.t += 1
            self.B.mul_(BETA).add_(G, alpha=1 - BETA)
            bc = 1 - BETA ** self.t
            if proj:
                Bh = self.B / bc
                Bh = Bh - Bh.mean(dim=0, keepdim=True)
                R = Bh / (Bh.norm(dim=1, keepdim=True) + EPS)
                R = R - R.mean(dim=0, keepdim=True)
            else:
                R = self.B / (self.B.norm(dim=1, keepdim=True) + EPS * bc)
            W.add_(R, alpha=-LR)


# ---- exact diameter: blocked all-pairs cdist (lower triangle of blocks) ---------------------
def diam_numpy(S, bs=1024):
    sq = np.einsum("ij,ij->i", S, S)
    best = np.float32(0)
    V = S.shape[0]
    for i0 in range(0, V, bs):
        for j0 in range(0, i0 + 1, bs):
            D2 = sq[i0:i0 + bs, None] + sq[None, j0:j0 + bs] - 2 * (S[i0:i0 + bs] @ S[j0:j0 + bs].T)
            best = max(best, D2.max())
    return float(np.sqrt(max(best, 0)))


def diam_torch(S, bs=1024):
    best = 0.0
    V = S.size(0)
    for i0 in range(0, V, bs):
        for j0 in range(0, i0 + 1, bs):
            best = max(best, torch.cdist(S[i0:i0 + bs], S[j0:j0 + bs]).max().item())
    return best


def gradient_like(V, d, rng):
    """Zipf row norms over tokens, centred rows (bench.c's kind 0)."""
    S = rng.standard_normal((V, d), dtype=np.float32)
    S -= S.mean(axis=0, keepdims=True)
    ranks = rng.permutation(V) + 1
    S *= (1.0 / ranks / np.linalg.norm(S, axis=1)).astype(np.float32)[:, None]
    return S


def make_job(key, th, cache):
    """A callable running the work named by key (data built once, kept in cache)."""
    parts = key.split("/")
    rng = np.random.default_rng(1)
    lib = parts[-1]
    if parts[0] == "gptstep":
        import gpt_step  # beside this script (its directory is on sys.path)
        return gpt_step.make_job(key, th, cache)
    if lib in ("torch", "torchbf16") and th is None:
        return None
    if parts[0] == "ns":
        r, c = (int(x) for x in parts[1].split("x"))
        G = rng.standard_normal((r, c), dtype=np.float32)
        if lib == "numpy":
            return lambda: ns_numpy(G)
        Gt = th.from_numpy(G)
        return lambda: ns_torch(Gt, bf16=lib == "torchbf16")
    if parts[0] == "rownorm":
        V, d = (int(x) for x in parts[1].split("x"))
        proj = parts[2] == "default"
        if ("rnGW", V, d) not in cache:
            cache[("rnGW", V, d)] = (rng.standard_normal((V, d), dtype=np.float32) * np.float32(1e-3),
                                     rng.standard_normal((V, d), dtype=np.float32) * np.float32(0.02))
        G, W = cache[("rnGW", V, d)]
        if lib == "numpy":
            st = RowNormNumpy(V, d)
            return lambda: st.step(W, G, proj)
        stt, Wt, Gt = RowNormTorch(V, d), th.from_numpy(W.copy()), th.from_numpy(G)
        return lambda: stt.step(Wt, Gt, proj)
    if parts[0] == "diam":
        V, d = (int(x) for x in parts[1].split("x"))
        if ("diamS", V, d) not in cache:
            cache[("diamS", V, d)] = gradient_like(V, d, rng)
        S = cache[("diamS", V, d)]
        if lib == "numpy":
            return lambda: diam_numpy(S)
        St = th.from_numpy(S)
        return lambda: diam_torch(St)
    return None


def serve(th):
    print("HELLO numpy=%s torch=%s" % (np.__version__, th.__version__ if th is not None else "none"), flush=True)
    jobs, cache = {}, {}
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "quit":
            break
        if cmd[0] == "free":
            jobs.clear()
            cache.clear()
            print("OK", flush=True)
            continue
        if cmd[0] in ("run", "warm") and len(cmd) == 2:
            if cmd[1] not in jobs:
                jobs[cmd[1]] = make_job(cmd[1], th, cache)
            f = jobs[cmd[1]]
            if f is None:
                print("NA", flush=True)
                continue
            if cmd[0] == "warm":
                f()
            t0 = time.perf_counter()
            f()
            print("T %.9f" % (time.perf_counter() - t0), flush=True)
            continue
        print("ERR", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--section", choices=["ns", "nsbf16", "rownorm", "diam", "gptstep"])
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    reps = max(5, args.reps)
    th = torch if (torch is not None and not args.no_torch) else None
    if th is not None:
        th.set_num_threads(args.threads)
    if args.serve:
        try:
            serve(th)
        except BrokenPipeError:  # bench.c went away: nothing to report to
            pass
        return
    if not args.section:
        ap.error("--section or --serve is required")
    print("PEERINFO peers: numpy %s%s, OPENBLAS_NUM_THREADS=%s" % (
        np.__version__, (", torch %s" % th.__version__) if th is not None else ", torch not installed (skipped)",
        os.environ.get("OPENBLAS_NUM_THREADS", "?")))
    if args.section == "ns":
        keys = ["ns/%dx%d/%s" % (r, c, lib) for r, c in [(768, 768), (768, 3072), (3072, 768), (2048, 2048),
                                                          (1024, 4096)] for lib in ("numpy", "torch")]
    elif args.section == "nsbf16":
        keys = ["ns/%dx%d/%s" % (r, c, lib) for r, c in [(768, 768), (768, 3072), (3072, 768), (2048, 2048),
                                                          (1024, 4096)] for lib in ("torch", "torchbf16")]
    elif args.section == "rownorm":
        keys = ["rownorm/%dx%d/%s/%s" % (V, d, mode, lib) for V, d in [(50257, 768), (32768, 2048), (8192, 512)]
                for mode in ("default", "compat") for lib in ("numpy", "torch")]
    elif args.section == "gptstep":  # train_bench's default config (6 layers, d 384, 6 heads, V 4096, T 256, B 4)
        keys = ["gptstep/6x384x6x4096x256x4/%s" % j for j in ("fb", "muon32", "muon", "step")]
    else:
        keys = ["diam/16384x768/numpy", "diam/16384x768/torch"]
    cache = {}
    fns = [(k, make_job(k, th, cache)) for k in keys]
    bench([(k, f) for k, f in fns if f is not None], reps)


if __name__ == "__main__":
    main()
