-- KernelBench Level 2, problem 100 (ConvTranspose3d_Clamp_Min_Divide), in fp32:
-- nn.ConvTranspose3d (3 x 3 x 3, stride 2, padding 1), clamp from below at -1
-- (torch.clamp with min only: torch.max with -1), divided by 2.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose3d_clamp_min_divide"
compose = { ops.conv_transpose3d{ kernel = 3, stride = 2, padding = 1 }, ops.max{ -1.0 }, ops.div{ 2.0 } }
variants = {
  { name = "n4_c64_16x32x32_k128", N = 4, C = 64, D = 16, H = 32, W = 32, K = 128, tags = { "main" } },
  { name = "kb100", N = 16, C = 64, D = 24, H = 48, W = 48, K = 128, tags = { "kernelbench" } },
  { name = "n2_c3_4x5x7_k4", N = 2, C = 3, D = 4, H = 5, W = 7, K = 4, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 100, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference). torch.min and
-- torch.clamp with a number are written as F.threshold and F.hardtanh (the
-- same values): torch.clamp called as the chain's first function raised
-- KeyError '__import__' in the oracle's frame (no builtins; torch 2.11).
oracle = "F.threshold(F.conv_transpose3d(x, w, conv_bias, stride=2, padding=1), -1.0, -1.0) / 2.0"
