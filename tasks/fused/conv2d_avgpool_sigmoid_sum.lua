-- KernelBench Level 2, problem 65 (Conv2d_AvgPool_Sigmoid_Sum), in fp32:
-- nn.Conv2d (3 x 3, with its bias), AvgPool2d(4), sigmoid, then the sum of
-- each image over its channels and its plane (dim [1, 2, 3]): here the
-- plane's sum, then the sum over the channels, y[N, 1, 1] (torch's is [N]).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_avgpool_sigmoid_sum"
compose = { ops.conv2d{ kernel = 3 }, ops.avgpool2d{ 4 }, ops.sigmoid{}, ops.sum{}, ops.channel_sum{} }
variants = {
  { name = "n32_c8_128x128_k64", N = 32, C = 8, H = 128, W = 128, K = 64, tags = { "main" } },
  { name = "kb65", N = 128, C = 8, H = 384, W = 384, K = 64, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 65, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.sum(torch.sigmoid(F.avg_pool2d(F.conv2d(x, w, conv_bias), 4)), dim=[1, 2, 3])"
