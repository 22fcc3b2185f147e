-- Attention forward at head dimension 256, bf16, with the log-sum-exp
-- (PTXBench's mha_with_lse_d256 and mha_with_lse_d256_causal; klab's
-- attention tasks stop at D = 128); _mha.lua defines the shared fields.
local F = include "_mha.lua"

name = "mha_fwd_d256_bf16"
tags = { "serving", "attention", "bf16", "fwd" }
description = F.description({
  kernel = "attention_fwd",
  types = "bf16 in and out, fp32 accumulation.",
  score = "(q_i . k_j)",
  vscale = "",
  sig = "const __nv_bfloat16 *Q, const __nv_bfloat16 *K,\n      const __nv_bfloat16 *V",
})
F.define(_ENV, {
  kernel = "attention_fwd",
  variants = F.variants(256, "mha_with_lse_d256"),
  ref_args = [[buffer("Q"), buffer("K"), buffer("V"), u64(0), u64(0), u64(0)]],
  dt = 2,
  args = [[buffer("Q"), buffer("K"), buffer("V")]],
})
buffers.Q = { role = "input", dtype = "bf16", shape = F.BHSD }
buffers.K = { role = "input", dtype = "bf16", shape = F.BHSD }
buffers.V = { role = "input", dtype = "bf16", shape = F.BHSD }

-- As klab's attention tasks: N(0, 1), two seeds, then PTXBench's spiky mix
-- on Q and K (peaked score rows).
local N01 = { dist = "normal", mean = 0, std = 1 }
inputs = { Q = N01, K = N01, V = N01 }
trials = 2
distributions = {
  { name = "randn" },
  { name = "spiky_qk", inputs = { Q = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 },
                                  K = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
}

-- As klab's attention tasks: bf16 O within PTXBench's 1e-2, the fp32 LSE
-- within 1e-3.
tolerance = {
  bf16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 },
  f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 },
}

-- cuDNN's SDPA forward (klab's description allows D up to 256), causal
-- where the variant is.
baseline = { lib = "cudnn", op = "sdpa_fwd", causal = false, route = "auto" }
precision = "bf16"
