-- Softsign in fp32 (KernelBench Level 1, problem 30): Y = X / (1 + |X|).
-- cuDNN has no single pointwise mode for it in klab's graph, so the
-- baseline is the kernel in baseline.cu.
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "softsign_f32", op = "softsign", dtype = "f32" })

-- An addition and a division, each rounded once in fp32: within 1.2e-7 of
-- the reference relative to the output. rtol = 1e-6 keeps a margin of
-- eight; a fast reciprocal (__fdividef, 2 ulp) still passes, a bf16
-- intermediate does not. atol follows the input's scale near zero.
tolerance = {
  f32 = { atol = 1e-6, rtol = 1e-6, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 30, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "X / (1 + torch.abs(X))"
