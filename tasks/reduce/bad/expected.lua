-- Known-bad reduction kernels and the verdict klab must give each one (each
-- names a folder next to this file; they run on the task's "small"
-- variant with its default plan).
return {
  { name = "argmax_last_tie", task = "argmax_last_bf16", verdict = "incorrect",
    why = "keeps the highest index of equal maxima; the task wants the lowest, and its bf16 uniform rows tie" },
  { name = "max_init_zero", task = "max_last_f32", verdict = "incorrect",
    why = "the maximum starts from 0: returns 0 on the rows that are negative throughout" },
  { name = "sum_evict_last", task = "sum_last_f32", verdict = "passed",
    why = "loads with L2::evict_last policies, so that its 4 MB input would outlive a plain L2 flush; correct, and "
      .. "tests/gpu/l2_check.lua times it against the same kernel without the hints" },
  { name = "triton_sum_bf16", task = "sum_last_f32", verdict = "incorrect",
    why = "Triton: rounds every value to bf16 and sums in bf16, so row sums miss by tenths (the tolerance is 3e-2)" },
  { name = "cute_sum_skips_last_tile", task = "sum_last_f32", verdict = "incorrect",
    why = "CuTe: counts a row's 256-column tiles as C / 256 rounded down, so the last 253 of 1021 columns are never added" },
  { name = "sum_mid_no_guard", task = "sum_mid_f32", verdict = "guard_violation",
    why = "no bounds check on the column: the spare threads of the last batch write past the end of Y (D = 129)" },
}
