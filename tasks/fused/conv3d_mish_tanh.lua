-- KernelBench Level 2, problem 47 (Conv3d_Mish_Tanh), in fp32: nn.Conv3d (3 x 3
-- x 3, with its bias), Mish, tanh.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv3d_mish_tanh"
compose = { ops.conv3d{ kernel = 3 }, ops.mish{}, ops.tanh{} }
variants = {
  { name = "n8_c32_16x32x32_k64", N = 8, C = 32, D = 16, H = 32, W = 32, K = 64, tags = { "main" } },
  { name = "kb47", N = 16, C = 32, D = 32, H = 64, W = 64, K = 64, tags = { "kernelbench" } },
  { name = "n2_c3_5x7x9_k4", N = 2, C = 3, D = 5, H = 7, W = 9, K = 4, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 47, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.tanh(F.mish(F.conv3d(x, w, conv_bias)))"
