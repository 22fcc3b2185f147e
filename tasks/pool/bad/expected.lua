-- Known-bad pooling kernels and the verdict klab must give each one (each
-- names a folder next to this file; they run on the task's "small" variant
-- with its default plan).
return {
  { name = "max_zero_padding", task = "maxpool2d_bf16", verdict = "incorrect",
    why = "starts the maximum at 0 instead of -inf: wrong wherever a window is all negative (edge windows, and the "
       .. "all-negative input set)" },
  { name = "avg_excludes_padding", task = "avgpool2d_f32", verdict = "incorrect",
    why = "divides by the number of elements inside the image (count_include_pad=False) instead of 9: wrong on "
       .. "every edge window" },
}
