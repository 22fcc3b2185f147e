-- Attention forward, bf16 (see _family.lua and docs/attention.md).
local F = include "_family.lua"

name = "attn_fwd"
family = "attention"
kernel = "attention_fwd"
tags = { "attention", "bf16", "fwd" }
description = F.fwd_description(false)

dims = F.dims(false)
variants = F.variants(false)
buffers = F.fwd_buffers
inputs = F.fwd_inputs
trials = F.trials
distributions = F.distributions
tolerance = F.fwd_tolerance

reference = F.fwd_reference
baseline = { lib = "cudnn", op = "sdpa_fwd", causal = false, route = "auto" }

flops = F.fwd_flops(false)
targets = F.targets
plan = F.fwd_plan
