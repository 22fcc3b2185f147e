-- Hinge loss in fp32 (KernelBench Level 1, problem 100): L = mean of
-- max(1 - P T, 0) with targets T of ±1. _pointwise.lua defines every field
-- but the distributions and the tolerance.
local L = include "_pointwise.lua"
-- T is drawn N(0, 1) and made its sign (+1 or -1) by the reference's
-- derive step, as KernelBench's targets are. Multiply, subtract, clamp,
-- add: four operations per element.
L.define(_ENV, { op = "hinge", formula = "max(1 - P*T, 0), every T being +1 or -1", flops = 4, derive = [[
local n = R * C
return { launches = { { kernel = "hinge_targets", grid = { math.min(cdiv(n, 256), 65536), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("T"), u64(n) } } } }
]] })

-- KernelBench-Verified's scaled inputs and PTXBench's spiky mix on P, two
-- seeds each (T stays ±1 whatever its scale). The loss grows about
-- linearly with a large scale (tol_scale 3) and tends to 1 with a small
-- one (tol_scale 1).
distributions = {
  { name = "randn" },
  { name = "x3", scale = 3, tol_scale = 3 },
  { name = "x0.01", scale = 0.01, tol_scale = 1 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { P = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
}

-- As for mse_f32: rtol = 1e-4 allows any sensible fp32 order of the sum of
-- 268M non-negative terms and fails a single running fp32 accumulator, a
-- missing clamp or a wrong count.
tolerance = {
  f32 = { atol = 1e-6, rtol = 1e-4, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 100, differs = "targets are a full matrix; KernelBench's are a vector of ±1 broadcast over the columns" }
