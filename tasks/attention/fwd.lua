-- Attention forward, bf16 (see _family.lua and docs/attention.md).
local F = include "_family.lua"
F.define(_ENV, { name = "attn_fwd", pass = "fwd", causal = false })
