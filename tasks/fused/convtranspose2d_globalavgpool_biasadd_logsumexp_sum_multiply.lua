-- KernelBench Level 2, problem 42
-- (ConvTranspose2d_GlobalAvgPool_BiasAdd_LogSumExp_Sum_Multiply), in fp32:
-- nn.ConvTranspose2d (3 x 3, stride 1, with its bias), the plane's mean, a
-- parameter of shape [K, 1, 1] added, logsumexp over the channels (dim 1,
-- keepdim), the sum over the (one-place) plane, times 10: y[N, 1, 1]
-- (torch's is [N, 1]).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose2d_globalavgpool_biasadd_logsumexp_sum_multiply"
compose = { ops.conv_transpose2d{ kernel = 3 }, ops.mean{}, ops.add_vec{ name = "bias" }, ops.channel_logsumexp{},
  ops.sum{}, ops.scale{ 10.0 } }
variants = {
  { name = "n16_c64_128x128_k128", N = 16, C = 64, H = 128, W = 128, K = 128, tags = { "main" } },
  { name = "kb42", N = 16, C = 64, H = 512, W = 512, K = 128, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 42, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.sum(torch.logsumexp(torch.mean(F.conv_transpose2d(x, w, conv_bias), dim=(2, 3), keepdim=True) " ..
  "+ bias[:, None, None], dim=1, keepdim=True), dim=(2, 3)) * 10.0"
