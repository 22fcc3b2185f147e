-- 2D max pooling in NHWC, fp32 (3x3 window, stride 2, padding 1); cuDNN's
-- resample (MAXPOOL) as the baseline. See _family.lua.
local pool = include "_family.lua"

name = "maxpool2d_f32"
family = "pool"
kernel = "maxpool2d"
tags = { "pool", "maxpool", "f32", "memory-bound" }
description = pool.description("maxpool2d", "max", pool.MAX_RULE,
  "fp32 in and out", "float")

dims = pool.dims
variants = pool.variants("f32")
buffers = pool.buffers("f32")
inputs = pool.inputs
trials = pool.trials
distributions = pool.distributions
-- The maximum is one of the inputs, exactly representable in the output
-- type: any correct kernel reproduces it bit for bit, so nothing is
-- tolerated.
tolerance = {
  f32 = { atol = 0, rtol = 0, matched = 1.0 },
}

reference = pool.reference(false)
baseline = pool.baseline("f32", "MAXPOOL")
flops = pool.flops
targets = pool.targets
plan = pool.plan("maxpool2d")
