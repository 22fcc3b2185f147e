-- Known-bad activation kernels and the verdict klab must give each one
-- (each names a folder next to this file; they run on the task's "small"
-- variant, 999x1021).
return {
  { name = "tanh_exp_formula", task = "tanh_bf16", verdict = "incorrect",
    why = "tanh as (e^2x - 1)/(e^2x + 1): NaN where e^2x overflows, on the 'wide' inputs" },
  { name = "hardsigmoid_no_upper_clamp", task = "hardsigmoid_f32", verdict = "incorrect",
    why = "clamps at 0 only: X above 3 gives more than 1" },
  { name = "cute_relu_skips_last_tile", task = "relu_f32", verdict = "incorrect",
    why = "CuTe: counts n / 256 tiles rounded down, so the last partial tile of Y is never written" },
  { name = "relu_vec4_no_tail", task = "relu_f32", verdict = "guard_violation",
    why = "float4 loads and stores with no tail: the last store writes one float past the end of Y" },
  -- Correct, and timed as what it is: tests/gpu/check.lua also times it
  -- against itself without the hints.
  { name = "relu_evict_last", task = "relu_f32", verdict = "passed",
    why = "loads and stores with L2::evict_last policies, so that its lines would outlive the L2 flush; persisting "
       .. "lines are reset before every timed run" },
}
