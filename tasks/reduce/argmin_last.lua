-- Row argmin of bf16 (KernelBench Level 1, problem 52, over the last
-- dimension here): I[r] = the index of the smallest X[r, c], int32, ties
-- broken by the lowest index (torch.argmin, numpy.argmin). cuDNN has no
-- argmin, so the task ships a baseline kernel (baseline.cu).
-- _arg_last.lua defines every field.
local A = include "_arg_last.lua"
A.define(_ENV, "min")

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 52, differs = "bf16, over the last dimension; KernelBench's reduces dimension 1 (argmin_mid_f32)" }
