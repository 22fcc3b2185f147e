#!/usr/bin/env python3
"""sdpa_torch.py: PyTorch's scaled-dot-product attention timed the way klab times a kernel.

For each case (direction fwd|bwd, causal or not, B, H, S, D; bf16, Q/K/V/O
in [B, H, S, D] contiguous, scale 1/sqrt(D) -- the klab attention tasks,
see docs/attention.md) and each backend (cudnn, flash) this prints one
JSON line:

  {"kind": "fwd", "causal": false, "B": 4, "H": 48, "S": 4096, "D": 128,
   "backend": "cudnn", "impl": "...", "median_us": ..., "tflops": ...,
   "min_us": ..., "p10_us": ..., "p90_us": ..., "samples": ..., "torch": ..,
   "cudnn": 91900, "cudnn_path": ...}

What is timed:
  fwd  the forward with log-sum-exp, as the task asks: for cudnn
       torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, None,
       compute_log_sumexp=True, 0.0, causal, False) (PTXBench's baseline), for
       flash torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0,
       causal, False); if the private op is missing in this torch,
       F.scaled_dot_product_attention under sdpa_kernel(backend) with inputs
       that require grad (so the log-sum-exp is kept), and "impl" says so.
  bwd  torch.autograd.grad(out, (q, k, v), dO) after one forward of
       F.scaled_dot_product_attention under sdpa_kernel(backend), i.e. the
       backend's backward kernels on the saved O and log-sum-exp.
FLOPs: forward 4*B*H*S*S*D (halved for causal), backward 2.5x the forward.

Method (klab's timer, so numbers compare within one run): warm-up until both
`--warmup` calls and `--warmup-ms` have passed; before every sample a buffer
of 2 x L2 bytes is written outside the timed region (cold L2); one CUDA event
pair around each single call; `--samples` samples; the median is reported.

Usage:
  python3 tests/bench/sdpa_torch.py
  python3 tests/bench/sdpa_torch.py --cases fwd:0:4x48x4096x128,bwd:1:4x48x1024x128 --backends cudnn
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

SHAPES = ["4x48x4096x128", "4x48x4096x64", "4x48x4096x96", "4x48x1024x128", "1x48x16384x128"]
DEFAULT_CASES = ",".join(f"{k}:{c}:{s}" for k in ("fwd", "bwd") for c in (0, 1) for s in SHAPES)


def percentile(sorted_vals, q):
    if not sorted_vals:
        return float("nan")
    pos = q * (len(sorted_vals) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def time_case(fn, flush, samples, warmup, warmup_ms):
    stream = torch.cuda.current_stream()
    t0 = time.perf_counter()
    n = 0
    while n < warmup or (time.perf_counter() - t0) * 1e3 < warmup_ms:
        fn()
        n += 1
        if n % 8 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    for i in range(samples):
        flush.fill_(i + 1)
        starts[i].record(stream)
        fn()
        ends[i].record(stream)
    torch.cuda.synchronize()
    return sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))


def backend_enum(name):
    from torch.nn.attention import SDPBackend
    return {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[name]


def make_fwd(backend, q, k, v, causal):
    """Returns (fn, impl): fn() runs one forward that produces O and the log-sum-exp."""
    aten = torch.ops.aten
    if backend == "cudnn" and hasattr(aten, "_scaled_dot_product_cudnn_attention"):
        op = aten._scaled_dot_product_cudnn_attention
        try:
            op(q, k, v, None, True, 0.0, causal, False)
            return (lambda: op(q, k, v, None, True, 0.0, causal, False)), \
                "aten._scaled_dot_product_cudnn_attention(compute_log_sumexp=True)"
        except (TypeError, RuntimeError):
            pass
        try:  # torch 2.4: (q, k, v, dropout_p, is_causal, return_debug_mask)
            op(q, k, v, 0.0, causal, False)
            return (lambda: op(q, k, v, 0.0, causal, False)), "aten._scaled_dot_product_cudnn_attention (2.4 form)"
        except (TypeError, RuntimeError):
            pass
    if backend == "flash" and hasattr(aten, "_scaled_dot_product_flash_attention"):
        op = aten._scaled_dot_product_flash_attention
        op(q, k, v, 0.0, causal, False)
        return (lambda: op(q, k, v, 0.0, causal, False)), "aten._scaled_dot_product_flash_attention"
    from torch.nn.attention import sdpa_kernel
    qg, kg, vg = (x.detach().requires_grad_(True) for x in (q, k, v))
    be = backend_enum(backend)

    def fn():
        with sdpa_kernel(be):
            return F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
    fn()
    return fn, f"F.scaled_dot_product_attention under sdpa_kernel({backend}), inputs requiring grad"


def make_bwd(backend, q, k, v, causal, dout):
    from torch.nn.attention import sdpa_kernel
    qg, kg, vg = (x.detach().requires_grad_(True) for x in (q, k, v))
    with sdpa_kernel(backend_enum(backend)):
        out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)

    def fn():
        return torch.autograd.grad(out, (qg, kg, vg), dout, retain_graph=True)
    fn()
    return fn, f"autograd.grad of F.scaled_dot_product_attention under sdpa_kernel({backend})"


def cudnn_info():
    info = {"cudnn": None, "cudnn_path": None}
    try:
        info["cudnn"] = torch.backends.cudnn.version()
    except Exception:
        pass
    try:
        import nvidia.cudnn
        f = getattr(nvidia.cudnn, "__file__", None)
        info["cudnn_path"] = os.path.dirname(f) if f else list(nvidia.cudnn.__path__)[0]
    except Exception:
        pass
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=DEFAULT_CASES, help="comma-separated kind:causal:BxHxSxD")
    ap.add_argument("--backends", default="cudnn,flash")
    ap.add_argument("--samples", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--warmup-ms", type=float, default=100.0)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--cudnn-dir", action="store_true", help="print the nvidia.cudnn lib directory and exit")
    args = ap.parse_args()
    if args.cudnn_dir:
        d = cudnn_info()["cudnn_path"]
        if not d:
            return 1
        print(os.path.join(d, "lib"))
        return 0

    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device visible to torch"}))
        return 1
    torch.cuda.set_device(args.device)
    dev = torch.device("cuda", args.device)
    props = torch.cuda.get_device_properties(dev)
    l2 = int(getattr(props, "L2_cache_size", 0)) or (60 << 20)
    flush = torch.empty((2 * l2 + 3) // 4, dtype=torch.int32, device=dev)
    common = dict(cudnn_info(), torch=torch.__version__, cuda=torch.version.cuda, device=props.name,
                  l2_flush_bytes=flush.numel() * 4)
    rc = 0
    for case in [c.strip() for c in args.cases.split(",") if c.strip()]:
        kind, causal, shape = case.split(":")
        causal = causal in ("1", "true", "causal")
        B, H, S, D = (int(x) for x in shape.lower().split("x"))
        fwd_flops = 4 * B * H * S * S * D // (2 if causal else 1)
        flops = fwd_flops if kind == "fwd" else fwd_flops * 5 // 2
        g = torch.Generator(device=dev)
        g.manual_seed(1234)
        q, k, v, dout = (torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16, generator=g) for _ in range(4))
        for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
            rec = dict(common, kind=kind, causal=causal, B=B, H=H, S=S, D=D, backend=backend, flops=flops)
            try:
                fn, impl = (make_fwd(backend, q, k, v, causal) if kind == "fwd"
                            else make_bwd(backend, q, k, v, causal, dout))
                rec["impl"] = impl
                us = time_case(fn, flush, args.samples, args.warmup, args.warmup_ms)
                med = statistics.median(us)
                rec.update(median_us=round(med, 3), tflops=round(flops / (med * 1e-6) / 1e12, 3),
                           min_us=round(us[0], 3), p10_us=round(percentile(us, 0.10), 3),
                           p90_us=round(percentile(us, 0.90), 3), samples=len(us))
            except Exception as e:  # one failing case must not hide the others
                rec["error"] = f"{type(e).__name__}: {e}"[:400]
                rc = 1
            print(json.dumps(rec), flush=True)
            torch.cuda.empty_cache()
        del q, k, v, dout
    return rc


if __name__ == "__main__":
    sys.exit(main())
