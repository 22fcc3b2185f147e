-- Row argmax of bf16: I[r] = the index of the largest X[r, c], int32, ties
-- broken by the lowest index (torch.argmax, numpy.argmax). cuDNN has no
-- argmax, so the task ships a baseline kernel (baseline.cu).
-- _arg_last.lua defines every field.
local A = include "_arg_last.lua"
A.define(_ENV, "max")

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 51, differs = "bf16, over the last dimension; KernelBench's reduces dimension 1 (argmax_mid_f32)" }
