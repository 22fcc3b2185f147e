-- Attention backward, causal, bf16 (see _family.lua and docs/attention.md).
local F = include "_family.lua"

name = "attn_bwd_causal"
family = "attention"
kernel = "attention_bwd"
tags = { "attention", "bf16", "bwd", "causal" }
description = F.bwd_description(true)

dims = F.dims(true)
variants = F.variants(true)
buffers = F.bwd_buffers
inputs = F.bwd_inputs
trials = F.trials
distributions = F.distributions
tolerance = F.bwd_tolerance

reference = F.bwd_reference
baseline = { lib = "cudnn", op = "sdpa_bwd", causal = true, route = "auto" }

flops = F.bwd_flops(true)
targets = F.targets
plan = F.bwd_plan
