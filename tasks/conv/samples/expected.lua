-- Sample solutions of the convolution tasks and the verdict each must get
-- (each names a folder next to this file; samples run on the task's first
-- "main" variant). The bf16 convolutions target wgmma and TMA, which these
-- direct kernels do not use; the depthwise tasks are memory-bound and
-- target nothing.
return {
  { name = "naive_conv", task = "conv2d_bf16", verdict = "target_not_executed",
    why = "a direct convolution, one thread per output element, fp32 sums: correct, no tensor cores" },
  { name = "naive_dwconv", task = "dwconv2d_f32", verdict = "passed",
    why = "a direct depthwise convolution, one thread per output element, fp32: correct" },
  { name = "naive_convt", task = "convt2d_bf16", verdict = "target_not_executed",
    why = "a gathering transposed convolution, one thread per output element, fp32 sums: correct, no tensor cores" },
  { name = "naive_conv_nchw", task = "conv2d_nchw_f32", verdict = "passed",
    why = "a direct NCHW convolution with groups, padding, stride and dilation per axis, one thread per output, fp32" },
  { name = "naive_convt_nchw", task = "convt2d_nchw_f32", verdict = "passed",
    why = "a gathering NCHW transposed convolution with groups, padding, stride and dilation per axis, fp32" },
  { name = "naive_conv_nchw", task = "conv3d_f32", verdict = "passed",
    why = "a direct NCDHW convolution with groups, padding, stride and dilation per axis, one thread per output, fp32" },
  { name = "naive_convt_nchw", task = "convt3d_f32", verdict = "passed",
    why = "a gathering NCDHW transposed convolution with output padding and groups, one thread per output, fp32" },
  { name = "naive_conv_nchw", task = "conv2d_nchw_bias_f32", verdict = "passed",
    why = "the same folder's conv2d_nchw_bias: the direct NCHW convolution, its sum started at the bias" },
}
