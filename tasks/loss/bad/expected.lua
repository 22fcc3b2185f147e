-- Known-bad loss kernels and the verdict klab must give each one (each
-- names a folder next to this file; they run on the task's "small"
-- variant with its default plan).
return {
  { name = "ce_no_max_shift", task = "cross_entropy_bf16", verdict = "incorrect",
    why = "log(sum exp(x)) without the row maximum: Inf on the logits shifted to about 100" },
  { name = "huber_no_half", task = "huber_f32", verdict = "incorrect",
    why = "d^2 where the loss is d^2 / 2 for |P - T| < 1: about a third too large" },
  { name = "mse_past_end", task = "mse_f32", verdict = "guard_violation",
    why = "correct, and also stores the count in L[1], one float past the end of the one-element L" },
}
