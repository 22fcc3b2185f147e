-- KernelBench Level 2, problem 78 (ConvTranspose3d_Max_Max_Sum), in fp32:
-- nn.ConvTranspose3d (5 x 5 x 5, stride 2, padding 2, with its bias),
-- MaxPool3d(2), MaxPool3d(3), then the sum over the channels (dim 1, keepdim).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose3d_max_max_sum"
compose = { ops.conv_transpose3d{ kernel = 5, stride = 2, padding = 2 }, ops.maxpool3d{ 2 }, ops.maxpool3d{ 3 },
  ops.channel_sum{} }
variants = {
  { name = "n8_c16_16x32x32_k32", N = 8, C = 16, D = 16, H = 32, W = 32, K = 32, tags = { "main" } },
  { name = "kb78", N = 16, C = 32, D = 32, H = 32, W = 32, K = 64, tags = { "kernelbench" } },
  { name = "n2_c3_4x5x7_k4", N = 2, C = 3, D = 4, H = 5, W = 7, K = 4, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 78, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.sum(F.max_pool3d(F.max_pool3d(F.conv_transpose3d(x, w, conv_bias, stride=2, padding=2), 2), 3), " ..
  "dim=1, keepdim=True)"
