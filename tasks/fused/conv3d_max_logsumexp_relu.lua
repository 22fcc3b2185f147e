-- KernelBench Level 2, problem 43 (Conv3d_Max_LogSumExp_ReLU), in fp32:
-- nn.Conv3d (3 x 3 x 3, stride 1, padding 1, with its bias), MaxPool3d(2,
-- stride 2), logsumexp over the channels (dim 1, keepdim), then ReLU.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv3d_max_logsumexp_relu"
compose = { ops.conv3d{ kernel = 3, padding = 1 }, ops.maxpool3d{ 2 }, ops.channel_logsumexp{}, ops.relu{} }
variants = {
  { name = "n2_c16_16x64x64_k32", N = 2, C = 16, D = 16, H = 64, W = 64, K = 32, tags = { "main" } },
  { name = "kb43", N = 4, C = 32, D = 32, H = 128, W = 128, K = 64, tags = { "kernelbench" } },
  { name = "n2_c3_4x5x7_k4", N = 2, C = 3, D = 4, H = 5, W = 7, K = 4, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 43, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.relu(torch.logsumexp(F.max_pool3d(F.conv3d(x, w, conv_bias, padding=1), 2, stride=2), dim=1, " ..
  "keepdim=True))"
