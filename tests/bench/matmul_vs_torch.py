#!/usr/bin/env python3
"""matmul_vs_torch.py: PyTorch's GEMM timed the way klab times its cuBLASLt baseline.

For each (dtype, M, N, K) case this times C = A @ B.t() with A[M,K] and B[N,K]
row-major (the klab task semantics; see docs/baselines.md) and prints one JSON
line:

  {"dtype": "bf16", "M": 4096, "N": 4096, "K": 4096, "median_us": ..., "tflops": ...,
   "min_us": ..., "p10_us": ..., "p90_us": ..., "samples": ..., ...}

Method (the same as klab's timer, so the numbers are comparable in one run):
  * inputs generated on the device, warm-up until both `--warmup` launches and
    `--warmup-ms` milliseconds have passed;
  * before every sample, outside the timed region, a buffer of 2 x L2 bytes is
    written (a different value each time), so each sample starts with a cold L2;
  * one CUDA event pair around each single launch, on the current stream;
  * `--samples` samples; the median is reported (with min, p10, p90, mean).

dtypes:
  bf16, f16  torch.matmul in that dtype (fp32 accumulate; torch's default
             reduced-precision-reduction flags are recorded, not changed)
  f32        torch.matmul in fp32 with torch.backends.cuda.matmul.allow_tf32 = False
  tf32       the same with allow_tf32 = True (klab: dtype f32, compute tf32)
  e4m3       torch._scaled_mm(A, B.t(), scale_a, scale_b, out_dtype=bf16,
             use_fast_accum=False) with per-tensor fp32 scales; B.t() is the
             column-major operand _scaled_mm wants, i.e. the same TN GEMM.

Usage:
  python3 tests/bench/matmul_vs_torch.py
  python3 tests/bench/matmul_vs_torch.py --dtypes bf16,e4m3 --shapes 4096x4096x4096,8192x8192x8192
"""

import argparse
import json
import statistics
import sys
import time

import torch

DEFAULT_SHAPES = "1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,128x4096x4096,4096x14336x4096"
DEFAULT_DTYPES = "bf16,f16,e4m3,f32,tf32"


def parse_shapes(s):
    out = []
    for part in s.split(","):
        dims = [int(x) for x in part.lower().split("x")]
        if len(dims) != 3 or min(dims) < 1:
            raise SystemExit(f"bad shape {part!r}: want MxNxK")
        out.append(tuple(dims))
    return out


def percentile(sorted_vals, q):
    """Linear interpolation between closest ranks (q in [0, 1])."""
    if not sorted_vals:
        return float("nan")
    pos = q * (len(sorted_vals) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def make_case(dtype, M, N, K, dev):
    """Returns (fn, impl) where fn() enqueues one GEMM and returns its output."""
    g = torch.Generator(device=dev)
    g.manual_seed(1234)
    if dtype in ("bf16", "f16", "f32", "tf32"):
        tdt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
               "tf32": torch.float32}[dtype]
        A = torch.randn(M, K, device=dev, dtype=tdt, generator=g)
        B = torch.randn(N, K, device=dev, dtype=tdt, generator=g)
        return (lambda: torch.matmul(A, B.t())), "torch.matmul"
    if dtype == "e4m3":
        A = (torch.randn(M, K, device=dev, generator=g) * 0.5).to(torch.float8_e4m3fn)
        B = (torch.randn(N, K, device=dev, generator=g) * 0.5).to(torch.float8_e4m3fn)
        sa = torch.tensor(0.5, device=dev, dtype=torch.float32)
        sb = torch.tensor(2.0, device=dev, dtype=torch.float32)
        Bt = B.t()  # [K, N], column-major: the operand layout _scaled_mm requires
        return (lambda: torch._scaled_mm(A, Bt, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                         use_fast_accum=False)), "torch._scaled_mm"
    raise SystemExit(f"unknown dtype {dtype!r} (expected bf16, f16, e4m3, f32 or tf32)")


def time_case(fn, flush, samples, warmup, warmup_ms):
    stream = torch.cuda.current_stream()
    # Warm-up: at least `warmup` launches and `warmup_ms` of wall time.
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
        flush.fill_(i + 1)          # cold L2: write 2 x L2 bytes, outside the events
        starts[i].record(stream)
        fn()
        ends[i].record(stream)
    torch.cuda.synchronize()
    return sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))  # microseconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help="comma-separated MxNxK (default: %(default)s)")
    ap.add_argument("--dtypes", default=DEFAULT_DTYPES, help="comma-separated (default: %(default)s)")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10, help="minimum warm-up launches")
    ap.add_argument("--warmup-ms", type=float, default=100.0, help="minimum warm-up time")
    ap.add_argument("--device", type=int, default=0)
    args = ap.parse_args()

    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device visible to torch"}))
        return 1
    torch.cuda.set_device(args.device)
    dev = torch.device("cuda", args.device)
    props = torch.cuda.get_device_properties(dev)
    l2 = int(getattr(props, "L2_cache_size", 0)) or (60 << 20)
    flush = torch.empty((2 * l2 + 3) // 4, dtype=torch.int32, device=dev)
    try:
        blas_lib = str(torch.backends.cuda.preferred_blas_library())
    except Exception:  # older torch
        blas_lib = "unknown"
    common = {
        "impl": None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": props.name,
        "l2_flush_bytes": flush.numel() * 4,
        "preferred_blas": blas_lib,
        "bf16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "fp16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
    }

    rc = 0
    for dtype in [d.strip() for d in args.dtypes.split(",") if d.strip()]:
        for (M, N, K) in parse_shapes(args.shapes):
            torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
            rec = dict(common, dtype=dtype, M=M, N=N, K=K,
                       compute="tf32" if dtype == "tf32" else "f32",
                       allow_tf32=torch.backends.cuda.matmul.allow_tf32)
            if dtype == "tf32":  # klab names this case dtype=f32, compute=tf32
                rec["klab_dtype"] = "f32"
            try:
                fn, impl = make_case(dtype, M, N, K, dev)
                rec["impl"] = impl
                us = time_case(fn, flush, args.samples, args.warmup, args.warmup_ms)
                med = statistics.median(us)
                rec.update(median_us=round(med, 3),
                           tflops=round(2.0 * M * N * K / (med * 1e-6) / 1e12, 3),
                           min_us=round(us[0], 3), p10_us=round(percentile(us, 0.10), 3),
                           p90_us=round(percentile(us, 0.90), 3),
                           mean_us=round(statistics.fmean(us), 3), samples=len(us))
            except Exception as e:  # one failing case must not hide the others
                rec["error"] = f"{type(e).__name__}: {e}"
                rc = 1
            print(json.dumps(rec), flush=True)
            torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = False
    return rc


if __name__ == "__main__":
    sys.exit(main())
