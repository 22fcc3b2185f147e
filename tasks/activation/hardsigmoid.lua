-- HardSigmoid in fp32 (KernelBench Level 1, problem 28), torch's
-- definition: Y = min(max(X/6 + 1/2, 0), 1). cuDNN has no single pointwise
-- mode for it in klab's graph, so the baseline is the kernel in
-- baseline.cu.
-- _family.lua defines the shapes, inputs, reference, baseline and plan.
local A = include "_family.lua"
A.define(_ENV, { name = "hardsigmoid_f32", op = "hardsigmoid", dtype = "f32" })

-- Two fp32 roundings (X/6, + 1/2) on an output of at most 1: within 1.2e-7
-- of the reference. atol = rtol = 1e-6 keep a margin of eight and fail a
-- bf16 or fp16 intermediate (4e-3, 5e-4).
tolerance = {
  f32 = { atol = 1e-6, rtol = 1e-6, matched = 1.0 },
}

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 28, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.hardsigmoid(X)"
