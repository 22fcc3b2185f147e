-- GELU in bf16, the tanh approximation (PyTorch's approximate='tanh',
-- cuDNN's GELU_APPROX_TANH_FWD), fp32 arithmetic inside.
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "gelu_tanh_bf16", op = "gelu_tanh", dtype = "bf16" })

-- bf16 outputs: see BF16_TOLERANCE in _family.lua (rtol 1e-2 for one
-- bf16 rounding, atol 1e-3 near zero).
tolerance = {
  bf16 = A.BF16_TOLERANCE,
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 88, exact = true, note = "bf16" }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "0.5 * X * (1.0 + torch.tanh(0.7978845608028654 * (X + 0.044715 * X ** 3)))"
