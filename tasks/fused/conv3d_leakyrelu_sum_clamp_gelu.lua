-- KernelBench Level 2, problem 90 (Conv3d_LeakyReLU_Sum_Clamp_GELU), in fp32:
-- nn.Conv3d (3 x 3 x 3, with its bias), LeakyReLU (0.2), a parameter of shape
-- [K, 1, 1, 1] added, clamp to [-1, 1], GELU.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv3d_leakyrelu_sum_clamp_gelu"
compose = { ops.conv3d{ kernel = 3 }, ops.leaky_relu{ 0.2 }, ops.add_vec{ name = "sum_tensor" }, ops.clamp{ -1.0, 1.0 },
  ops.gelu{} }
variants = {
  { name = "n16_c8_16x64x64_k64", N = 16, C = 8, D = 16, H = 64, W = 64, K = 64, tags = { "main" } },
  { name = "kb90", N = 128, C = 8, D = 16, H = 64, W = 64, K = 64, tags = { "kernelbench" } },
  { name = "n2_c3_5x7x9_k4", N = 2, C = 3, D = 5, H = 7, W = 9, K = 4, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 90, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.gelu(torch.clamp(F.leaky_relu(F.conv3d(x, w, conv_bias), negative_slope=0.2) + sum_tensor[:, " ..
  "None, None, None], min=-1.0, max=1.0))"
