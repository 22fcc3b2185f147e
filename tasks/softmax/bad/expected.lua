-- Known-bad softmax kernels and the verdict klab must give each one (each
-- names a folder next to this file; the task's default plan runs them).
return {
  { name = "no_max_shift", task = "softmax_bf16", verdict = "incorrect",
    why = "exp(x) without subtracting the row maximum: NaN on rows shifted to about 100 (the 'shifted' distribution)" },
  { name = "writes_past_end", task = "softmax_bf16", verdict = "guard_violation",
    why = "correct, and also writes one bf16 just past the end of Y" },
}
