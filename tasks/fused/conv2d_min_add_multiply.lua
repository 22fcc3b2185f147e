-- KernelBench Level 2, problem 31 (Conv2d_Min_Add_Multiply), in fp32: nn.Conv2d
-- (3 x 3, with its bias), torch.min with 0.5, a parameter of shape [K, 1, 1]
-- added, times 2.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_min_add_multiply"
compose = { ops.conv2d{ kernel = 3 }, ops.min{ 0.5 }, ops.add_vec{ name = "bias" }, ops.scale{ 2.0 } }
variants = {
  { name = "n16_c64_128x128_k128", N = 16, C = 64, H = 128, W = 128, K = 128, tags = { "main" } },
  { name = "kb31", N = 128, C = 64, H = 128, W = 128, K = 128, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 31, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference). torch.min and
-- torch.clamp with a number are written as F.threshold and F.hardtanh (the
-- same values): torch.clamp called as the chain's first function raised
-- KeyError '__import__' in the oracle's frame (no builtins; torch 2.11).
oracle = "(-F.threshold(-F.conv2d(x, w, conv_bias), -0.5, -0.5) + bias[:, None, None]) * 2.0"
