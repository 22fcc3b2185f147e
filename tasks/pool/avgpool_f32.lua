-- 2D average pooling in NHWC, fp32 (3x3 window, stride 2, padding 1,
-- padding counted: every window divided by 9); cuDNN's resample
-- (AVGPOOL_INCLUDE_PADDING) as the baseline. See _family.lua.
local pool = include "_family.lua"
pool.define(_ENV, { name = "avgpool2d_f32", op = "avg", dtype = "f32" })

-- y is a ninth of a sum of up to 9 values of size 1 (|y| about 1/3): an
-- fp32 sum and division in any order is off by a few 1e-8, so atol = rtol
-- = 1e-5 leave a wide margin, while inputs cut to TF32, fp16 or bf16 (a
-- relative error of 5e-4 or more) fail.
tolerance = {
  f32 = { atol = 1e-5, rtol = 1e-5, matched = 1.0 },
}
