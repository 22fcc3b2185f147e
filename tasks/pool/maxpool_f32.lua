-- 2D max pooling in NHWC, fp32 (3x3 window, stride 2, padding 1); cuDNN's
-- resample (MAXPOOL) as the baseline. See _family.lua.
local pool = include "_family.lua"
pool.define(_ENV, { name = "maxpool2d_f32", op = "max", dtype = "f32" })

-- The maximum is one of the inputs, exactly representable in the output
-- type: any correct kernel reproduces it bit for bit, so nothing is
-- tolerated.
tolerance = {
  f32 = { atol = 0, rtol = 0, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 42, differs = "NHWC; KernelBench's is NCHW" }
