-- KernelBench Level 2, problem 71 (Conv2d_Divide_LeakyReLU), in fp32: nn.Conv2d
-- (3 x 3, with its bias), divided by 2, LeakyReLU (0.01).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_divide_leakyrelu"
compose = { ops.conv2d{ kernel = 3 }, ops.div{ 2.0 }, ops.leaky_relu{ 0.01 } }
variants = {
  { name = "n32_c8_128x128_k64", N = 32, C = 8, H = 128, W = 128, K = 64, tags = { "main" } },
  { name = "kb71", N = 128, C = 8, H = 128, W = 128, K = 64, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 71, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.leaky_relu(F.conv2d(x, w, conv_bias) / 2.0, negative_slope=0.01)"
