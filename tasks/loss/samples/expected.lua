-- Sample solutions and the verdict each must get (each names a folder next
-- to this file; samples run on the task's first "main" variant).
-- Memory-bound tasks have no target instruction family, so a correct sample
-- passes.
return {
  { name = "naive_mse", task = "mse_f32", verdict = "passed",
    why = "block partial sums in fp32, then one block in a fixed order: correct, deterministic and plain" },
  { name = "naive_cross_entropy", task = "cross_entropy_bf16", verdict = "passed",
    why = "a block per row, three passes through the row maximum, fp32: correct and plain" },
  { name = "naive_cross_entropy_mean", task = "cross_entropy_mean_f32", verdict = "passed",
    why = "a block per row through the row maximum in fp32, then the rows' mean in a fixed order" },
}
