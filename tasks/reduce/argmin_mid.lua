-- argmin over the middle dimension of fp32 X[B, N, D] (KernelBench Level 1,
-- problem 52: torch.argmin(x, dim=1)). _arg_last.lua's define_mid sets every
-- field.
local A = include "_arg_last.lua"
A.define_mid(_ENV, "min")

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 52, exact = true, note = "int32 indices where torch's are int64" }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.argmin(X, dim=1)"
