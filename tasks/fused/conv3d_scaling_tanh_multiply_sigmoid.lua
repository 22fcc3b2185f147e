-- KernelBench Level 2, problem 48 (Conv3d_Scaling_Tanh_Multiply_Sigmoid), in
-- fp32: nn.Conv3d (3 x 3 x 3, with its bias), times a parameter of shape [K, 1,
-- 1, 1], tanh, times a second one, sigmoid.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv3d_scaling_tanh_multiply_sigmoid"
compose = { ops.conv3d{ kernel = 3 }, ops.mul_vec{ name = "scaling_factor" }, ops.tanh{}, ops.mul_vec{ name = "bias" },
  ops.sigmoid{} }
variants = {
  { name = "n16_c3_16x64x64_k16", N = 16, C = 3, D = 16, H = 64, W = 64, K = 16, tags = { "main" } },
  { name = "kb48", N = 128, C = 3, D = 16, H = 64, W = 64, K = 16, tags = { "kernelbench" } },
  { name = "n2_c3_5x7x9_k4", N = 2, C = 3, D = 5, H = 7, W = 9, K = 4, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 48, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.sigmoid(torch.tanh(F.conv3d(x, w, conv_bias) * scaling_factor[:, None, None, None]) * bias[:, " ..
  "None, None, None])"
