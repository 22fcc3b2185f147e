-- KL divergence in fp32 (KernelBench Level 1, problem 98: kl_div(log P, T,
-- reduction = 'batchmean')): L = (1/R) sum over every element of
-- T (log T - log P), for rows of P and T that are distributions (softmaxes
-- of normal logits, as KernelBench's). _pointwise.lua defines every field
-- but the distributions and the tolerance.
local L = include "_pointwise.lua"
-- two logarithms, a subtraction, a product, an add: five per element.
L.define(_ENV, { op = "kl_div", formula = "T * (log(T) - log(P)) (every row of P and of T sums to 1)",
  per = "(1/R) * sum over all R*C elements", divisor = "R", flops = 5, derived = { "P", "T" }, derive = [[
return { launches = { { kernel = "softmax_rows", grid = { R, 2, 1 }, block = { 256, 1, 1 },
  args = { buffer("P"), buffer("T"), u32(C) } } } }
]] })

-- The logits are drawn (KernelBench-Verified's scales and PTXBench's spiky
-- mix change how peaked the rows are, not the rule) and made softmaxes by
-- the reference's derive step; the loss does not scale with them (no
-- tol_scale).
distributions = {
  { name = "randn" },
  { name = "x3", scale = 3 },
  { name = "x0.01", scale = 0.01 },
  { name = "neg", scale = -1 },
  { name = "spiky", inputs = { P = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 },
    T = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
}

-- L is about the mean over rows of a row's KL divergence, about 1 for
-- N(0, 1) logits. fp32 logarithms (1 ulp) and an fp32 sum of 268M terms in
-- blocks put an honest kernel within about 1e-5 relative; rtol = 1e-4
-- allows every sensible order (as for mse_f32) and fails a single running
-- fp32 accumulator, a sum divided by R*C instead of R, or swapped P and T.
-- atol = 1e-6 matters only where the rows nearly agree (x0.01).
tolerance = {
  f32 = { atol = 1e-6, rtol = 1e-4, matched = 1.0 },
}

-- Why the baseline stays short of the physical floor (docs/tasks.md gives
-- its fraction on an H200).
baseline.floor_note = "two passes of block partial sums with a log per element: about 48% of the DRAM floor on an H200; a one-pass kernel is owed"

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 98, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.sum(T * (torch.log(T) - torch.log(P))) / R"
