-- Known-bad softmax kernels and the verdict klab must give each one (each
-- names a folder next to this file; the task's default plan runs them).
return {
  { name = "no_max_shift", task = "softmax_bf16", verdict = "incorrect",
    why = "exp(x) without subtracting the row maximum: NaN on rows shifted to about 100 (the 'shifted' distribution)" },
  { name = "max_misses_half", task = "softmax_bf16", verdict = "incorrect",
    why = "the maximum's reduction skips its first step: NaN on the 'peaked' rows when the peak is in the half it misses" },
  { name = "writes_past_end", task = "softmax_bf16", verdict = "guard_violation",
    why = "correct, and also writes one bf16 just past the end of Y" },
  { name = "log_of_softmax", task = "logsoftmax_bf16", verdict = "incorrect",
    why = "log(exp(x - max) / sum): -Inf where exp underflows, on the 'wide' rows" },
  { name = "modifies_input", task = "logsoftmax_bf16", verdict = "input_modified",
    why = "correct output, but stores x - max back into X" },
}
