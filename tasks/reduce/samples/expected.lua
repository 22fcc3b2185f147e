-- Sample solutions and the verdict each must get (each names a folder next
-- to this file; samples run on the task's first "main" variant).
-- Memory-bound tasks have no target instruction family, so a correct sample
-- passes.
return {
  { name = "naive_sum_last", task = "sum_last_f32", verdict = "passed",
    why = "a block per row, fp32 sums in a fixed order and a shared-memory tree: correct and plain" },
  { name = "naive_arg_mid", task = "argmax_mid_f32", verdict = "passed",
    why = "a thread per output scanning the middle dimension in order: the lowest index of the maximum" },
  { name = "naive_arg_mid", task = "argmin_mid_f32", verdict = "passed",
    why = "the same folder's argmin_mid" },
  { name = "triton_sum_last", task = "sum_last_f32", verdict = "passed",
    why = "Triton: a program per row, fp32 sums BLOCK columns at a time, then tl.sum: correct and plain" },
  { name = "cute_sum_last", task = "sum_last_f32", verdict = "passed",
    why = "CuTe: the row divided among 256 threads by local_partition, predicated through an identity tensor, "
       .. "fp32 sums in a fixed order: correct and plain" },
}
