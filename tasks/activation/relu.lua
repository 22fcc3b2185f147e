-- ReLU in fp32: Y = max(X, 0). Strict fp32; no TF32 path exists for a
-- pointwise operation, so cuDNN's baseline is timed in fp32 only.
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "relu_f32", op = "relu", dtype = "f32" })

-- ReLU is exact in any precision: every output is an input or zero, so
-- an honest kernel matches the reference bit for bit (atol = rtol = 0).
-- Anything that rounds X on the way (a bf16 or TF32 intermediate, a half
-- copy) fails.
tolerance = {
  f32 = { atol = 0, rtol = 0, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 19, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.relu(X)"
