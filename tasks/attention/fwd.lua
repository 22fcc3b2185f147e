-- Attention forward, bf16 (see _family.lua and docs/attention.md).
local F = include "_family.lua"
F.define(_ENV, { name = "attn_fwd", pass = "fwd", causal = false })

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 97, differs = "bf16, also writes the LSE, and D ≤ 128; KernelBench's head dimension is 1024" }
