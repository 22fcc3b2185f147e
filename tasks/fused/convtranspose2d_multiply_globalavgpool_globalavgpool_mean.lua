-- KernelBench Level 2, problem 44
-- (ConvTranspose2d_Multiply_GlobalAvgPool_GlobalAvgPool_Mean), in fp32:
-- nn.ConvTranspose2d (3 x 3, stride 2, padding 1, output padding 1), times 0.5,
-- the mean over each channel's plane, then the mean of that one value.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose2d_multiply_globalavgpool_globalavgpool_mean"
compose = { ops.conv_transpose2d{ kernel = 3, stride = 2, padding = 1, output_padding = 1 }, ops.scale{ 0.5 }, ops.mean{},
  ops.mean{} }
variants = {
  { name = "n16_c64_64x64_k128", N = 16, C = 64, H = 64, W = 64, K = 128, tags = { "main" } },
  { name = "kb44", N = 16, C = 64, H = 128, W = 128, K = 128, tags = { "kernelbench" } },
  { name = "n3_c5_9x13_k6", N = 3, C = 5, H = 9, W = 13, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 44, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.mean(torch.mean(F.conv_transpose2d(x, w, conv_bias, stride=2, padding=1, " ..
  "output_padding=1) * 0.5, dim=[2, 3], keepdim=True), dim=[2, 3], keepdim=True)"
