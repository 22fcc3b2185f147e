-- KernelBench Level 2, problem 74
-- (ConvTranspose3d_LeakyReLU_Multiply_LeakyReLU_Max), in fp32:
-- nn.ConvTranspose3d (3 x 3 x 3, stride 2, padding 1, output padding 1),
-- LeakyReLU (0.2), times a parameter of shape [K, 1, 1, 1], LeakyReLU (0.2),
-- MaxPool3d(2).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose3d_leakyrelu_multiply_leakyrelu_max"
compose = { ops.conv_transpose3d{ kernel = 3, stride = 2, padding = 1, output_padding = 1 }, ops.leaky_relu{ 0.2 },
  ops.mul_vec{ name = "multiplier" }, ops.leaky_relu{ 0.2 }, ops.maxpool3d{ 2 } }
variants = {
  { name = "n8_c16_16x32x32_k32", N = 8, C = 16, D = 16, H = 32, W = 32, K = 32, tags = { "main" } },
  { name = "kb74", N = 16, C = 16, D = 16, H = 32, W = 32, K = 32, tags = { "kernelbench" } },
  { name = "n2_c3_4x5x7_k4", N = 2, C = 3, D = 4, H = 5, W = 7, K = 4, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 74, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.max_pool3d(F.leaky_relu(F.leaky_relu(F.conv_transpose3d(x, w, conv_bias, stride=2, padding=1, " ..
  "output_padding=1), negative_slope=0.2) * multiplier[:, None, None, None], negative_slope=0.2), 2)"
