-- Sample solutions and the verdict each must get (each names a folder next
-- to this file). Memory-bound tasks have no target instruction family, so a
-- correct sample passes.
return {
  { name = "naive", task = "softmax_bf16", verdict = "passed",
    why = "a block per row, three passes, fp32: correct and plain" },
}
