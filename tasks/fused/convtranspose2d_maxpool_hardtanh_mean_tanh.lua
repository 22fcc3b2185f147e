-- KernelBench Level 2, problem 10 (ConvTranspose2d_MaxPool_Hardtanh_Mean_Tanh),
-- in fp32: nn.ConvTranspose2d (3 x 3, stride 1, padding 1), MaxPool2d(2),
-- Hardtanh (-1, 1), the mean over each channel's plane (keepdim), tanh.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose2d_maxpool_hardtanh_mean_tanh"
compose = { ops.conv_transpose2d{ kernel = 3, stride = 1, padding = 1 }, ops.maxpool2d{ 2 }, ops.hardtanh{ -1.0, 1.0 },
  ops.mean{}, ops.tanh{} }
variants = {
  { name = "n16_c64_128x128_k64", N = 16, C = 64, H = 128, W = 128, K = 64, tags = { "main" } },
  { name = "kb10", N = 128, C = 64, H = 256, W = 256, K = 64, tags = { "kernelbench" } },
  { name = "n3_c5_9x13_k6", N = 3, C = 5, H = 9, W = 13, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 10, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.tanh(torch.mean(F.hardtanh(F.max_pool2d(F.conv_transpose2d(x, w, conv_bias, stride=1, " ..
  "padding=1), 2), min_val=-1.0, max_val=1.0), dim=[2, 3], keepdim=True))"
