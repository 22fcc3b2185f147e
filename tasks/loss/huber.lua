-- Huber loss in fp32 (KernelBench Level 1, problem 96: torch's
-- smooth_l1_loss with beta = 1, the mean): L = mean of 0.5 d^2 where
-- d = |P - T| < 1, else d - 0.5. _pointwise.lua defines every field but
-- the distributions and the tolerance.
local L = include "_pointwise.lua"
-- subtract, absolute value, compare, square or subtract, add: five per element.
L.define(_ENV, { op = "huber", formula = "(d < 1 ? d^2 / 2 : d - 1/2) with d = |P - T|", flops = 5 })

-- KernelBench-Verified's scaled inputs and PTXBench's spiky mix, two seeds
-- each. The loss grows about linearly with a large scale (the d - 1/2
-- branch: tol_scale 3 for x3) and with its square with a small one (the
-- d^2/2 branch: 1e-4 for x0.01).
local SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }
distributions = {
  { name = "randn" },
  { name = "x3", scale = 3, tol_scale = 3 },
  { name = "x0.01", scale = 0.01, tol_scale = 1e-4 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { P = SPIKY, T = SPIKY } },
}

-- As for mse_f32 (rtol = 1e-4 allows any sensible fp32 order of the sum of
-- 268M non-negative terms, about 1e-5 relative, and fails a single running
-- fp32 accumulator, a missing branch or a wrong count); atol is a floor
-- for the scaled inputs.
tolerance = {
  f32 = { atol = 1e-6, rtol = 1e-4, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 96, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.smooth_l1_loss(P, T)"
