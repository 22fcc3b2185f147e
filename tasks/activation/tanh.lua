-- tanh in bf16, fp32 arithmetic inside.
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "tanh_bf16", op = "tanh", dtype = "bf16" })

-- bf16 outputs: see BF16_TOLERANCE in _family.lua (rtol 1e-2 for one
-- bf16 rounding, atol 1e-3 near zero).
tolerance = {
  bf16 = A.BF16_TOLERANCE,
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 22, exact = true, note = "bf16" }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.tanh(X)"
