-- Sample solutions of the normalization tasks and the verdict each must get
-- (each names a folder next to this file; the task's default plan runs it
-- on the task's first main shape). Memory-bound tasks have no target
-- instruction family, so a correct sample passes.
return {
  { name = "naive", task = "layernorm_bf16", verdict = "passed",
    why = "a block per row, two-pass statistics in fp32: correct and plain" },
  { name = "naive_f32", task = "layernorm_f32", verdict = "passed",
    why = "the same in fp32, block sums in a tree: within 1e-4 on shifted rows too" },
  { name = "naive_rmsnorm", task = "rmsnorm_bf16", verdict = "passed",
    why = "a block per row, the sum of squares in fp32" },
  { name = "naive_batchnorm", task = "batchnorm_bf16", verdict = "passed",
    why = "a thread per element of NHWC, channel = index mod C" },
  { name = "naive_groupnorm", task = "groupnorm_bf16", verdict = "passed",
    why = "a block per (sample, group), two-pass statistics in fp32" },
  { name = "naive_rmsnorm_mid", task = "rmsnorm_mid_f32", verdict = "passed",
    why = "a thread per (b, s) column: its fp32 mean of squares, then its outputs divided by the root" },
  { name = "naive_batchnorm_train", task = "batchnorm_train_f32", verdict = "passed",
    why = "a block per channel, a two-pass mean and variance in fp32 trees, then a thread per element" },
}
