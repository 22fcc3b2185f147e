-- Known-bad normalization kernels and the verdict klab must give each one
-- (each names a folder next to this file; the task's default plan runs them
-- on the task's small shape).
return {
  { name = "one_pass_variance", task = "layernorm_bf16", verdict = "incorrect",
    why = "variance as E[x^2] - E[x]^2 in fp32: catastrophic cancellation on rows shifted to 1000 (the 'shifted' "
       .. "distribution) puts it tens of percent off, or below zero" },
  { name = "vector_loads", task = "groupnorm_bf16", verdict = "runtime_error",
    why = "16-byte vector loads that assume every group starts 16-byte aligned: on 6 channels of 17x19 the second "
       .. "group starts 3876 bytes in and the load faults (misaligned address)" },
}
