-- The grouped GEMM of a mixture-of-experts layer: the routed tokens'
-- rows, already permuted so that each expert's rows are contiguous
-- (moe_route_*'s dest order), multiplied by that expert's weight (vLLM's
-- fused_moe and FlashInfer-Bench's moe definitions run it twice per layer,
-- for the gate/up and the down projections). bf16 in and out, fp32
-- accumulation.
name = "moe_grouped_gemm_bf16"
family = "serving"
kernel = "moe_grouped_gemm"
tags = { "serving", "moe", "grouped-gemm", "bf16" }

description = [[
Write a CUDA kernel named `moe_grouped_gemm`: the grouped GEMM of the
experts of a mixture-of-experts layer. X is bf16 [M, K] (row-major, K
contiguous): M rows sorted by expert, expert e owning rows
expert_offsets[e] .. expert_offsets[e+1]-1 (expert_offsets int32 [E + 1],
expert_offsets[0] = 0, expert_offsets[E] = M). Loads are uneven: an expert
may own no rows, and one may own nearly all of them; a count is a multiple
of no tile size. W is bf16 [E, N, K] (row-major: expert e's weight is
W[e], [N, K], K contiguous, as torch's nn.Linear stores it). For every row
r of expert e:
  Y[r, n] = sum over k of X[r, k] * W[e, n, k],
accumulated in fp32, written as bf16 Y [M, N] (round to nearest even).
Inputs must not be modified. Here M=${M}, E=${E}, N=${N}, K=${K}.
With the default launch plan the kernel is
  extern "C" __global__ void moe_grouped_gemm(const __nv_bfloat16 *X, const __nv_bfloat16 *W,
      const int *expert_offsets, __nv_bfloat16 *Y, unsigned M, unsigned E, unsigned N, unsigned K)
launched with a grid of (ceil(N/16), ceil(M/16), 1) blocks of 16x16 threads
(a thread per element of Y) and no dynamic shared memory. Send your own plan
to change any of this (tensor maps, clusters, dynamic shared memory).]]

dims = { "M", "E", "N", "K" }

-- DeepSeek-V3's routed experts under 8-way expert parallelism (32 experts
-- per GPU, hidden 7168, expert intermediate 2048, FlashInfer-Bench's
-- moe_*_e32_h7168_i2048): the gate/up projection (N = 2 * 2048) and the
-- down projection (K = 2048) on a prefill of 16384 tokens (8 experts
-- each, spread over 8 GPUs: 16384 rows per GPU on average), the
-- gate/up projection on a decode batch's 64 rows (every expert's weight
-- read for a few rows: memory-bound), Qwen3-30B-A3B's 128 experts (hidden
-- 2048, intermediate 768) on 1024 tokens of 8 experts each, and a small odd
-- shape.
variants = {
  { M = 16384, E = 32, N = 4096, K = 7168, name = "deepseek-v3_gate_up_m16384",
    tags = { "main", "prefill", "DeepSeek-V3" } },
  { M = 16384, E = 32, N = 7168, K = 2048, name = "deepseek-v3_down_m16384",
    tags = { "main", "prefill", "DeepSeek-V3" } },
  { M = 64, E = 32, N = 4096, K = 7168, name = "deepseek-v3_gate_up_m64", tags = { "decode", "DeepSeek-V3" } },
  { M = 8192, E = 128, N = 1536, K = 2048, name = "qwen3-30b-a3b_gate_up_m8192", tags = { "prefill", "Qwen3-30B-A3B" } },
  { M = 300, E = 7, N = 200, K = 136, name = "300x7x200x136", tags = { "odd", "small" } },
}

buffers = {
  X = { role = "input", dtype = "bf16", shape = { "M", "K" } },
  W = { role = "input", dtype = "bf16", shape = { "E", "N", "K" } },
  expert_offsets = { role = "input", dtype = "i32", shape = { "E + 1" } },
  Y = { role = "output", dtype = "bf16", shape = { "M", "N" } },
}

-- X and W N(0, 1) (as the GEMM tasks); the offsets drawn as large integers
-- and folded by derive (reference.cu's make_ragged_offsets): cut points
-- uniform on [0, M], sorted, so the loads vary several-fold and some
-- experts may own nothing.
local N01 = { dist = "normal", mean = 0, std = 1 }
inputs = { X = N01, W = N01, expert_offsets = { dist = "int", lo = 0, hi = 1 << 30 } }

-- Two seeds of that, a hot expert (cut points drawn in [0, 3]: the last
-- expert owns all but at most three rows, the others at most three each,
-- most none), and PTXBench's spiky mix on X.
local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
trials = 2
distributions = {
  { name = "randn" },
  { name = "hot_expert", inputs = { expert_offsets = { dist = "int", lo = 0, hi = 3 } } },
  { name = "spiky_x", inputs = { X = SPIKY } },
}

-- As gemm_bf16 (tasks/gemm/bf16.lua says why): the bf16 output's rounding
-- (2^-9 relative) and fp32 accumulation in any order stay well inside
-- 1e-2, while a kernel that accumulates in bf16, reads another expert's
-- weight or leaves rows unwritten misses by whole units.
tolerance = {
  bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 },
}

-- The reference (reference.cu): fp64 sums (the prelude's GEMM core) per
-- expert, a unit an element of Y.
reference = {
  source = "reference.cu", accumulate = "f64", units = { Y = 1 },
  derived = { "expert_offsets" },
  derive = [[
return { launches = { { kernel = "make_ragged_offsets", grid = { 1, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("expert_offsets"), buffer("expert_offsets"), u64(0), u64(0), u64(0), u64(0), u32(1),
           u32(E), u32(M), u32(0) } } } }
]],
  plan = [[
assert(E <= 1024, "the offsets' derive sorts at most 1024 experts")
if nsample > 0 then
  return { launches = { { kernel = "moe_gemm_ref_units", grid = { cdiv(nsample * 32, 256), 1, 1 }, block = { 256, 1, 1 },
    args = { buffer("X"), buffer("W"), buffer("expert_offsets"), buffer("positions"), u64(nsample), buffer("Y"),
             u32(E), u32(N), u32(K) } } } }
end
return { launches = { { kernel = "moe_gemm_ref", grid = { cdiv(N, 64), cdiv(M, 64), E }, block = { 16, 16, 1 },
  args = { buffer("X"), buffer("W"), buffer("expert_offsets"), buffer("Y"), u32(N), u32(K) } } } }
]],
}

-- klab's cuBLASLt description has no grouped GEMM (cuBLASLt's grouped
-- matmul takes per-group pointers and sizes), and a batched GEMM over
-- padded groups would cost as many rows per expert as the hottest one's:
-- the task ships a plain SIMT tile kernel (baseline.cu), far from the
-- tensor floor.
baseline = {
  source = "baseline.cu", name = "SIMT grouped GEMM",
  plan = [[
return { launches = { { kernel = "moe_gemm_baseline", grid = { cdiv(N, 64), cdiv(M, 64), E }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("W"), buffer("expert_offsets"), buffer("Y"), u32(N), u32(K) } } } }
]],
  floor_note = "the shipped kernel runs on the SIMT pipes, not the bf16 tensor cores, and launches a block per "
    .. "64 rows of M for every expert (most return at once); a wgmma grouped GEMM is owed; not measured on a GPU yet",
}

-- Every row is one expert's: 2*M*N*K. The bytes are the least any draw
-- costs, so that the physical floor stays below every run: X, Y and the
-- offsets, and one expert's weight (an expert with no rows need not be
-- read, and under the hot-expert draw one expert owns nearly every row).
-- At decode sizes a run reads most experts' weights, far above this.
flops = function(d) return 2 * d.M * d.N * d.K end
bytes = function(d) return 2 * d.M * d.K + 2 * d.M * d.N + 4 * (d.E + 1) + 2 * d.N * d.K end
precision = "bf16"
tensor_type = "bf16"
work = 0.9
targets = {
  sm_90a = { "wgmma", "tma" },
  sm_100a = { "tcgen05.mma", "tcgen05.tmem", "tma" },
}

plan = [[
-- Default plan: a thread per element of Y.
return { launches = { { kernel = "moe_grouped_gemm", grid = { cdiv(N, 16), cdiv(M, 16), 1 }, block = { 16, 16, 1 },
  shared = 0, args = { buffer("X"), buffer("W"), buffer("expert_offsets"), buffer("Y"), u32(M), u32(E), u32(N),
                       u32(K) } } } }
]]
