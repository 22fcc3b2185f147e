-- Attention forward, causal, bf16 (see _family.lua and docs/attention.md).
local F = include "_family.lua"

name = "attn_fwd_causal"
family = "attention"
kernel = "attention_fwd"
tags = { "attention", "bf16", "fwd", "causal" }
description = F.fwd_description(true)

dims = F.dims(true)
variants = F.variants(true)
buffers = F.fwd_buffers
inputs = F.fwd_inputs
trials = F.trials
distributions = F.distributions
tolerance = F.fwd_tolerance

reference = F.fwd_reference
baseline = { lib = "cudnn", op = "sdpa_fwd", causal = true, route = "auto" }

flops = F.fwd_flops(true)
targets = F.targets
plan = F.fwd_plan
