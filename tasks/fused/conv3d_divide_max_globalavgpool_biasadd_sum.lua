-- KernelBench Level 2, problem 8 (Conv3d_Divide_Max_GlobalAvgPool_BiasAdd_Sum),
-- in fp32: nn.Conv3d (3 x 3 x 3, with its bias), divided by 2, MaxPool3d(2),
-- the global average (AdaptiveAvgPool3d((1, 1, 1))), a parameter of shape
-- [K, 1, 1, 1] added, then the sum over the channels (dim 1): y[N, 1, 1]
-- (torch's is [N, 1, 1, 1]).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv3d_divide_max_globalavgpool_biasadd_sum"
compose = { ops.conv3d{ kernel = 3 }, ops.div{ 2.0 }, ops.maxpool3d{ 2 }, ops.mean{}, ops.add_vec{ name = "bias" },
  ops.channel_sum{} }
variants = {
  { name = "n16_c8_16x64x64_k16", N = 16, C = 8, D = 16, H = 64, W = 64, K = 16, tags = { "main" } },
  { name = "kb8", N = 128, C = 8, D = 16, H = 64, W = 64, K = 16, tags = { "kernelbench" } },
  { name = "n2_c3_4x5x7_k4", N = 2, C = 3, D = 4, H = 5, W = 7, K = 4, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 8, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference): the global
-- average pooling written as the mean over the plane (the same values).
oracle = "torch.sum(torch.mean(F.max_pool3d(F.conv3d(x, w, conv_bias) / 2.0, 2), dim=(2, 3, 4), keepdim=True) " ..
  "+ bias[:, None, None, None], dim=1)"
