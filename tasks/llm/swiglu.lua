-- SwiGLU, the gated activation between a Llama MLP's up and down
-- projections (vLLM's silu_and_mul): X[T, 2D] holds the gate in columns
-- 0..D-1 and the up projection in D..2D-1, Y[T, D] = silu(gate) * up with
-- silu(a) = a / (1 + exp(-a)); bf16 in and out, fp32 arithmetic.
local F = include "_family.lua"

name = "swiglu_bf16"
family = "llm"
kernel = "swiglu"
tags = { "llm", "swiglu", "activation", "bf16", "memory-bound" }

description = [[
Write a CUDA kernel named `swiglu`: the SwiGLU activation of a gated MLP
(vLLM's silu_and_mul). X is bf16 [T, 2D] (row-major, __nv_bfloat16 bit
patterns): the gate a = X[t, j] and the up projection b = X[t, D + j] for
j < D. Compute
  Y[t, j] = silu(a) * b,   silu(a) = a / (1 + exp(-a)),
in fp32 and write Y as bf16 [T, D] (round to nearest even). Here T=${T},
D=${D}.
With the default launch plan the kernel is
  extern "C" __global__ void swiglu(const __nv_bfloat16 *X, __nv_bfloat16 *Y, unsigned T,
                                    unsigned D)
launched with one thread per element of Y (grid (ceil(T*D/256), 1, 1),
blocks of 256 threads) and no dynamic shared memory. Send your own plan to
change any of this.]]

dims = { "T", "D" }
-- 8192 tokens through Llama-3-8B's MLP (D = 14336) and 32768 through a
-- 4096-wide one (X and Y: 704 and 768 MiB, over 150 us on an H200), and a
-- small odd shape.
variants = {
  { T = 8192, D = 14336, tags = { "main" } },
  { T = 32768, D = 4096, tags = { "main" } },
  { T = 1000, D = 1023, tags = { "odd", "small" } },
}

buffers = {
  X = { role = "input", dtype = "bf16", shape = { "T", "2*D" } },
  Y = { role = "output", dtype = "bf16", shape = { "T", "D" } },
}

inputs = { X = { dist = "normal", mean = 0, std = 1 } }

-- KernelBench-Verified's scales: silu(s a) s b grows like s^2 for positive
-- gates (silu(a) ~ a) and near zero (silu(a) ~ a/2): tol_scale 9 and 1e-4.
-- Then the spiky mix, and gates of standard deviation 100 (wide): a fifth
-- of them beyond 88, where exp overflows fp32, so a sigmoid written as
-- exp(a) / (1 + exp(a)) gives Inf/Inf = NaN (a / (1 + exp(-a)) is safe).
trials = 2
distributions = F.distributions(9, 1e-4, {
  { name = "spiky", inputs = { X = F.SPIKY } },
  { name = "wide", inputs = { X = { dist = "normal", mean = 0, std = 100 } } },
})

-- bf16 outputs: see _family.lua. Y is a product, with no cancellation: an
-- fp32 computation, or silu rounded to bf16 before the product (PyTorch's
-- F.silu(a) * b), is within 0.4% of it.
tolerance = { bf16 = F.BF16 }

-- The reference (reference.cu): a thread per element, fp64. A unit is an
-- element of Y.
reference = {
  source = "reference.cu", accumulate = "f64", units = { Y = 1 },
  plan = [[
local n = nsample > 0 and nsample or T * D
return { launches = { { kernel = "swiglu_ref", grid = { cdiv(n, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("positions"), u64(n), buffer("Y"), u32(D) } } } }
]],
}

-- A cuDNN pointwise graph has the operations (SWISH_FWD, MUL), but the
-- gate and the up projection are two column ranges of one buffer: the up
-- half starts D elements past X's address, and klab binds each graph
-- tensor at its buffer's own address (no offsets). So the task ships a
-- kernel (baseline.cu): 8 outputs per thread with 16-byte accesses where
-- D allows.
baseline = {
  source = "baseline.cu", name = "vectorized SwiGLU",
  plan = [[
local per = D % 8 == 0 and 8 or 1
return { launches = { { kernel = "swiglu_baseline", grid = { cdiv(T * D // per, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("Y"), u32(T), u32(D) } } } }
]],
}

-- silu (negate, exp, add, divide), then the product: 5 operations per
-- output element (a convention).
flops = function(d) return 5 * d.T * d.D end
precision = "f32"
targets = F.targets

plan = [[
-- Default plan: one thread per element of Y, blocks of 256.
return { launches = { { kernel = "swiglu", grid = { cdiv(T * D, 256), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
  args = { buffer("X"), buffer("Y"), u32(T), u32(D) } } } }
]]
