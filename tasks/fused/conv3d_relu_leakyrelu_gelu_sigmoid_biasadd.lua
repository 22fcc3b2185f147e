-- KernelBench Level 2, problem 7 (Conv3d_ReLU_LeakyReLU_GELU_Sigmoid_BiasAdd),
-- in fp32: nn.Conv3d (3 x 3 x 3, with its bias), ReLU, LeakyReLU (0.01), GELU,
-- sigmoid, then a parameter of shape [K, 1, 1, 1] added.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv3d_relu_leakyrelu_gelu_sigmoid_biasadd"
compose = { ops.conv3d{ kernel = 3 }, ops.relu{}, ops.leaky_relu{ 0.01 }, ops.gelu{}, ops.sigmoid{},
  ops.add_vec{ name = "bias" } }
variants = {
  { name = "n16_c8_16x64x64_k32", N = 16, C = 8, D = 16, H = 64, W = 64, K = 32, tags = { "main" } },
  { name = "kb7", N = 64, C = 8, D = 32, H = 64, W = 64, K = 32, tags = { "kernelbench" } },
  { name = "n2_c3_5x7x9_k4", N = 2, C = 3, D = 5, H = 7, W = 9, K = 4, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 7, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.sigmoid(F.gelu(F.leaky_relu(torch.relu(F.conv3d(x, w, conv_bias)), " ..
  "negative_slope=0.01))) + bias[:, None, None, None]"
