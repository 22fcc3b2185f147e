-- Sample solutions and the verdict each must get (each names a folder next
-- to this file; samples run on the task's first "main" variant).
-- Memory-bound tasks have no target instruction family, so a correct
-- sample passes.
return {
  { name = "naive_cumsum", task = "cumsum_f32", verdict = "passed",
    why = "the block's first thread adds its row in order, in fp32: correct and slow" },
}
