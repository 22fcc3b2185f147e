-- KernelBench Level 2, problem 2
-- (ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide), in fp32:
-- nn.ConvTranspose2d (3 x 3, stride 2, padding 1, output padding 1), a
-- parameter of shape [K, 1, 1] added, clamp to [0, 1], times 2, clamp to [0,
-- 1], divided by 2.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose2d_biasadd_clamp_scaling_clamp_divide"
compose = { ops.conv_transpose2d{ kernel = 3, stride = 2, padding = 1, output_padding = 1 }, ops.add_vec{ name = "bias" },
  ops.clamp{ 0.0, 1.0 }, ops.scale{ 2.0 }, ops.clamp{ 0.0, 1.0 }, ops.div{ 2.0 } }
variants = {
  { name = "n16_c64_128x128_k64", N = 16, C = 64, H = 128, W = 128, K = 64, tags = { "main" } },
  { name = "kb2", N = 128, C = 64, H = 128, W = 128, K = 64, tags = { "kernelbench" } },
  { name = "n3_c5_9x13_k6", N = 3, C = 5, H = 9, W = 13, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 2, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference). torch.min and
-- torch.clamp with a number are written as F.threshold and F.hardtanh (the
-- same values): torch.clamp called as the chain's first function raised
-- KeyError '__import__' in the oracle's frame (no builtins; torch 2.11).
oracle = "F.hardtanh(F.hardtanh(F.conv_transpose2d(x, w, conv_bias, stride=2, padding=1, output_padding=1) + " ..
  "bias[:, None, None], min_val=0.0, max_val=1.0) * 2.0, min_val=0.0, max_val=1.0) / 2.0"
