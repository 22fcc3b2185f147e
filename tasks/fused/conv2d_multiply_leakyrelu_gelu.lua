-- KernelBench Level 2, problem 54 (Conv2d_Multiply_LeakyReLU_GELU), in fp32:
-- nn.Conv2d (3 x 3, with its bias), times a parameter of shape [K, 1, 1],
-- LeakyReLU (0.01), GELU.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_multiply_leakyrelu_gelu"
compose = { ops.conv2d{ kernel = 3 }, ops.mul_vec{ name = "multiplier" }, ops.leaky_relu{ 0.01 }, ops.gelu{} }
variants = {
  { name = "n16_c64_128x128_k64", N = 16, C = 64, H = 128, W = 128, K = 64, tags = { "main" } },
  { name = "kb54", N = 64, C = 64, H = 256, W = 256, K = 64, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 54, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.gelu(F.leaky_relu(F.conv2d(x, w, conv_bias) * multiplier[:, None, None], negative_slope=0.01))"
