-- A matrix times a scalar in fp32 (KernelBench Level 1, problem 5):
-- Y = 3.14 X element by element. klab's graph sets no scalar operand for a
-- single pointwise mode, so the baseline is the kernel in baseline.cu.
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "scale_f32", op = "scale", dtype = "f32" })

-- One fp32 multiply by 3.14 (itself 2.5e-8 away from 3.14 in fp32): within
-- 1e-7 relative of the fp64 reference; rtol = 1e-6 keeps a margin of ten
-- and fails a bf16 or fp16 product. atol follows the input's scale.
tolerance = {
  f32 = { atol = 1e-6, rtol = 1e-6, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 5, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "X * 3.14"
