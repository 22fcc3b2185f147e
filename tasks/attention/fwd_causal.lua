-- Attention forward, causal, bf16 (see _family.lua and docs/attention.md).
local F = include "_family.lua"
F.define(_ENV, { name = "attn_fwd_causal", pass = "fwd", causal = true })
