-- SiLU (swish, beta = 1) in bf16: Y = X·sigmoid(X), fp32 arithmetic inside
-- (cuDNN's SWISH_FWD with beta 1).
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "silu_bf16", op = "silu", dtype = "bf16" })

-- bf16 outputs: see BF16_TOLERANCE in _family.lua (rtol 1e-2 for one
-- bf16 rounding, atol 1e-3 near zero).
tolerance = {
  bf16 = A.BF16_TOLERANCE,
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 25, exact = true, note = "bf16" }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "X * torch.sigmoid(X)"
