-- KernelBench Level 2, problem 96
-- (ConvTranspose3d_Multiply_Max_GlobalAvgPool_Clamp), in fp32:
-- nn.ConvTranspose3d (3 x 3 x 3, stride 2, padding 1), times 0.5, MaxPool3d(2),
-- the mean over each channel's volume (AdaptiveAvgPool3d to 1), clamp to [0,
-- 1].
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose3d_multiply_max_globalavgpool_clamp"
compose = { ops.conv_transpose3d{ kernel = 3, stride = 2, padding = 1 }, ops.scale{ 0.5 }, ops.maxpool3d{ 2 }, ops.mean{},
  ops.clamp{ 0.0, 1.0 } }
variants = {
  { name = "n32_c3_16x32x32_k16", N = 32, C = 3, D = 16, H = 32, W = 32, K = 16, tags = { "main" } },
  { name = "kb96", N = 128, C = 3, D = 16, H = 32, W = 32, K = 16, tags = { "kernelbench" } },
  { name = "n2_c3_4x5x7_k4", N = 2, C = 3, D = 4, H = 5, W = 7, K = 4, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 96, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference). torch.min and
-- torch.clamp with a number are written as F.threshold and F.hardtanh (the
-- same values): torch.clamp called as the chain's first function raised
-- KeyError '__import__' in the oracle's frame (no builtins; torch 2.11).
oracle = "F.hardtanh(torch.mean(F.max_pool3d(F.conv_transpose3d(x, w, conv_bias, stride=2, padding=1) * 0.5, 2), " ..
  "dim=[2, 3, 4], keepdim=True), min_val=0.0, max_val=1.0)"
