-- 2D max pooling in NHWC, bf16 (3x3 window, stride 2, padding 1); cuDNN's
-- resample (MAXPOOL) faults in bf16 (see _family.lua): a shipped kernel is the baseline.
local pool = include "_family.lua"

name = "maxpool2d_bf16"
family = "pool"
kernel = "maxpool2d"
tags = { "pool", "maxpool", "bf16", "memory-bound" }
description = pool.description("maxpool2d", "max", pool.MAX_RULE,
  "bf16 in and out (__nv_bfloat16 bit patterns)", "bf16")

dims = pool.dims
variants = pool.variants("bf16")
buffers = pool.buffers("bf16")
inputs = pool.inputs
trials = pool.trials
distributions = pool.distributions
-- The maximum is one of the inputs, exactly representable in the output
-- type: any correct kernel reproduces it bit for bit, so nothing is
-- tolerated.
tolerance = {
  bf16 = { atol = 0, rtol = 0, matched = 1.0 },
}

reference = pool.reference(false)
baseline = pool.shipped_baseline(false)
flops = pool.flops
targets = pool.targets
plan = pool.plan("maxpool2d")
