-- KernelBench Level 2, problem 50
-- (ConvTranspose3d_Scaling_AvgPool_BiasAdd_Scaling), in fp32:
-- nn.ConvTranspose3d (3 x 3 x 3, stride 2, padding 1), times 0.5, AvgPool3d(2),
-- a parameter of shape [K, 1, 1, 1] added, times 1 (the scales are parameters
-- at their initial values).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose3d_scaling_avgpool_biasadd_scaling"
compose = { ops.conv_transpose3d{ kernel = 3, stride = 2, padding = 1 }, ops.scale{ 0.5 }, ops.avgpool3d{ 2 },
  ops.add_vec{ name = "bias" }, ops.scale{ 1.0 } }
variants = {
  { name = "n32_c3_16x32x32_k16", N = 32, C = 3, D = 16, H = 32, W = 32, K = 16, tags = { "main" } },
  { name = "kb50", N = 128, C = 3, D = 16, H = 32, W = 32, K = 16, tags = { "kernelbench" } },
  { name = "n2_c3_4x5x7_k4", N = 2, C = 3, D = 4, H = 5, W = 7, K = 4, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 50, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "(F.avg_pool3d(F.conv_transpose3d(x, w, conv_bias, stride=2, padding=1) * 0.5, 2) + bias[:, None, " ..
  "None, None]) * 1.0"
