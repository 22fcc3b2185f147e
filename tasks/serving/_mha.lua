-- What the dense multi-head attention tasks of PTXBench's suites share
-- (mha_fwd_d256.lua, mha_fwd_fp8.lua): attention forward with the
-- log-sum-exp over Q, K, V [B, H, S, D] (klab's attention tasks' layout and
-- kernel signature, tasks/attention/_family.lua), non-causal and causal
-- variants of one task (the dimension causal, 0 or 1), the reference the
-- serving family's fp64 attention rows (reference.cu's attn_rows_ref, its
-- dense layout 1).
local F = {}

-- The PTXBench shapes (its mha_with_lse generator's B = 4, H = 48, at
-- S = 2048 and 4096) for head dimension D, each causal and not, and a small
-- odd shape (S not a multiple of any tile, 3 heads).
function F.variants(D, problem)
  local out = {}
  for _, s in ipairs({ { S = 4096, main = true }, { S = 2048 } }) do
    for causal = 0, 1 do
      local tags = { "ptxbench", causal == 1 and problem .. "_causal" or problem }
      if s.main then tags[#tags + 1] = "main" end
      out[#out + 1] = { B = 4, H = 48, S = s.S, D = D, causal = causal, tags = tags,
                        name = ("4x48x%dx%d%s"):format(s.S, D, causal == 1 and "_causal" or "") }
    end
  end
  for causal = 0, 1 do
    out[#out + 1] = { B = 2, H = 3, S = 333, D = D, causal = causal, tags = { "odd", "small" },
                      name = ("2x3x333x%d%s"):format(D, causal == 1 and "_causal" or "") }
  end
  return out
end

-- The description. t.kernel: the kernel's name; t.types: the text that
-- says Q, K, V's element type and their scales; t.score, t.vscale: the
-- score's product and O's factor; t.sig: the kernel's input pointers.
function F.description(t)
  return ([[
Write a CUDA kernel named `%s`: scaled dot-product attention
forward with log-sum-exp, %s
Q, K, V are [B, H, S, D] row-major (D contiguous), B=${B}, H=${H}, S=${S},
D=${D}, causal=${causal}. For each (batch, head) and query row i:
  s_ij = %s / sqrt(D),  LSE_i = log(sum_j exp(s_ij))  (natural log),
  O_i = %s sum_j exp(s_ij - LSE_i) v_j,
over every key j when causal = 0, over the keys j <= i when causal = 1.
Write O as bf16 [B, H, S, D] (round to nearest even) and LSE as fp32
[B, H, S]. Inputs must not be modified.
With the default launch plan the kernel is
  extern "C" __global__ void %s(%s, __nv_bfloat16 *O, float *LSE,
      unsigned BH, unsigned S, unsigned D, float scale, unsigned causal)
with scale = 1/sqrt(D), launched with a grid of (ceil(S/64), B*H, 1) blocks
of 128 threads and no dynamic shared memory: block (x, y) owns query rows
64*x.. of (batch, head) y. Send your own plan to change any of this.]]):format(t.kernel, t.types, t.score, t.vscale, t.kernel, t.sig)
end

local BHSD = { "B", "H", "S", "D" }

-- Sets the fields the tasks share in env; the task file sets its name,
-- description, buffers, inputs, distributions, tolerance, baseline and
-- reference arguments. t = { kernel, variants, ref_args (the reference's
-- first six arguments), dt (the element type code), args (the default
-- plan's input arguments) }.
function F.define(env, t)
  env.family = "serving"
  env.kernel = t.kernel
  env.dims = { "B", "H", "S", "D", "causal" }
  env.zero_dims = { "causal" }
  env.variants = t.variants
  env.reference = {
    source = "reference.cu", accumulate = "f64", units = { O = "D", LSE = 1 }, sample = 256,
    plan = ([[
assert(D <= 256, "the reference keeps D <= 256 sums in shared memory")
local units = nsample > 0 and nsample or B * H * S
return { launches = { { kernel = "attn_rows_ref", grid = { units, 1, 1 }, block = { 256, 1, 1 },
  args = { %s, u64(0), u64(0), u64(0), u64(0), buffer("positions"), u64(nsample), buffer("O"), buffer("LSE"),
           u32(1), u32(%d), u32(B), u32(H), u32(H), u32(D), u32(S), u32(1), u32(1), u32(causal) } } } }
]]):format(t.ref_args, t.dt),
  }
  -- Two products of 2 * S * S * D per (batch, head), halved under the
  -- causal mask (klab's attention tasks' convention).
  env.flops = function(d)
    local f = 4 * d.B * d.H * d.S * d.S * d.D
    return d.causal == 1 and f // 2 or f
  end
  env.targets = {
    sm_90a = { "wgmma", "tma" },
    sm_100a = { "tcgen05.mma", "tcgen05.tmem", "tma" },
  }
  env.plan = ([[
-- Default plan: one launch of the kernel, 128 threads per 64 query rows
-- of one (batch, head).
return { launches = { { kernel = "%s", grid = { cdiv(S, 64), B * H, 1 }, block = { 128, 1, 1 }, shared = 0,
  args = { %s, buffer("O"), buffer("LSE"), u32(B * H), u32(S), u32(D), f32(1 / math.sqrt(D)), u32(causal) } } } }
]]):format(t.kernel, t.args)
  env.buffers = {
    O = { role = "output", dtype = "bf16", shape = BHSD },
    LSE = { role = "output", dtype = "f32", shape = { "B", "H", "S" } },
  }
end

F.BHSD = BHSD

return F
