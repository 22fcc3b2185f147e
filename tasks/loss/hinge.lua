-- Hinge loss in fp32 (KernelBench Level 1, problem 100): L = mean of
-- max(1 - P T, 0) with targets T of ±1, one per column: KernelBench's
-- targets are a vector of batch_size signs, which torch broadcasts over
-- the last dimension of the [batch_size, 32768] predictions (its two sizes
-- are equal). _pointwise.lua defines every field but the distributions and
-- the tolerance.
local L = include "_pointwise.lua"
-- T is drawn N(0, 1) and made its sign (+1 or -1) by the reference's
-- derive step, as KernelBench's targets are. Multiply, subtract, clamp,
-- add: four operations per element. The variants: 16384 x 16384 (1 GiB
-- read), KernelBench's 32768 x 32768 and an odd one.
L.define(_ENV, { op = "hinge", formula = "max(1 - P[r,c]*T[c], 0), every T being +1 or -1", flops = 4,
  column_targets = true, variants = {
    { R = 16384, C = 16384, tags = { "main" } },
    { R = 32768, C = 32768, tags = { "kernelbench" } },
    { R = 999, C = 1021, tags = { "odd", "small" } },
  }, derive = [[
local n = C
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
kernelbench = { level = 1, problem = 100, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.mean(torch.clamp(1 - P * T, min=0))"
