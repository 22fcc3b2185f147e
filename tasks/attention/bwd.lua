-- Attention backward, bf16 (see _family.lua and docs/attention.md).
local F = include "_family.lua"

name = "attn_bwd"
family = "attention"
kernel = "attention_bwd"
tags = { "attention", "bf16", "bwd" }
description = F.bwd_description(false)

dims = F.dims(false)
variants = F.variants(false)
buffers = F.bwd_buffers
inputs = F.bwd_inputs
trials = F.trials
distributions = F.distributions
tolerance = F.bwd_tolerance

reference = F.bwd_reference
baseline = { lib = "cudnn", op = "sdpa_bwd", causal = false, route = "auto" }

flops = F.bwd_flops(false)
targets = F.targets
plan = F.bwd_plan
