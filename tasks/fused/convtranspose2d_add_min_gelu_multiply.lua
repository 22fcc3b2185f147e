-- KernelBench Level 2, problem 93 (ConvTranspose2d_Add_Min_GELU_Multiply), in
-- fp32: nn.ConvTranspose2d (4 x 4, stride 2, no padding), plus 0.5, torch.min
-- with 0, GELU, times 2.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose2d_add_min_gelu_multiply"
compose = { ops.conv_transpose2d{ kernel = 4, stride = 2 }, ops.add{ 0.5 }, ops.min{ 0.0 }, ops.gelu{}, ops.scale{ 2.0 } }
variants = {
  { name = "n32_c64_64x64_k128", N = 32, C = 64, H = 64, W = 64, K = 128, tags = { "main" } },
  { name = "kb93", N = 128, C = 64, H = 64, W = 64, K = 128, tags = { "kernelbench" } },
  { name = "n3_c5_9x13_k6", N = 3, C = 5, H = 9, W = 13, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 93, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference). torch.min and
-- torch.clamp with a number are written as F.threshold and F.hardtanh (the
-- same values): torch.clamp called as the chain's first function raised
-- KeyError '__import__' in the oracle's frame (no builtins; torch 2.11).
oracle = "F.gelu(-F.threshold(-(F.conv_transpose2d(x, w, conv_bias, stride=2) + 0.5), 0.0, 0.0)) * 2.0"
