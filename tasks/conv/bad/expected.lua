-- Known-bad convolution kernels and the verdict klab must give each one
-- (each names a folder next to this file; they run on the task's "small"
-- variant).
return {
  { name = "conv_tf32", task = "conv2d_f32", verdict = "incorrect",
    why = "rounds x and w to TF32 before multiplying (what TF32 tensor cores do): about 4e-4*sqrt(C*R*S) off on y, "
       .. "beyond the fp32 tolerance" },
  { name = "conv_replicate_padding", task = "conv2d_bf16", verdict = "incorrect",
    why = "clamps coordinates into the image (edge padding) instead of zero padding: wrong on every border output" },
  { name = "dwconv_writes_past_end", task = "dwconv2d_bf16", verdict = "guard_violation",
    why = "correct y, and also one bf16 stored just past its end" },
}
