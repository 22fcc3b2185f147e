-- 2D max pooling in NHWC, bf16 (3x3 window, stride 2, padding 1); cuDNN's
-- resample (MAXPOOL) faults in bf16 (see _family.lua): a shipped kernel is the baseline.
local pool = include "_family.lua"
pool.define(_ENV, { name = "maxpool2d_bf16", op = "max", dtype = "bf16" })

-- The maximum is one of the inputs, exactly representable in the output
-- type: any correct kernel reproduces it bit for bit, so nothing is
-- tolerated.
tolerance = {
  bf16 = { atol = 0, rtol = 0, matched = 1.0 },
}

-- Why the baseline stays short of the physical floor (docs/tasks.md gives
-- its fraction on an H200).
baseline.floor_note = "a 3x3 window of stride 2 reads most input rows for two output rows, which L2 absorbs only in part: 8 channels per thread reach about 56% of the DRAM floor on an H200; a kernel that keeps rows on chip is owed"
