-- KernelBench Level 2, problem 16 (ConvTranspose2d_Mish_Add_Hardtanh_Scaling),
-- in fp32: nn.ConvTranspose2d (3 x 3, stride 2, padding 1, output padding 1),
-- Mish, plus 0.5, Hardtanh (-1, 1), times 2.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose2d_mish_add_hardtanh_scaling"
compose = { ops.conv_transpose2d{ kernel = 3, stride = 2, padding = 1, output_padding = 1 }, ops.mish{}, ops.add{ 0.5 },
  ops.hardtanh{ -1.0, 1.0 }, ops.scale{ 2.0 } }
variants = {
  { name = "n16_c64_128x128_k64", N = 16, C = 64, H = 128, W = 128, K = 64, tags = { "main" } },
  { name = "kb16", N = 128, C = 64, H = 128, W = 128, K = 64, tags = { "kernelbench" } },
  { name = "n3_c5_9x13_k6", N = 3, C = 5, H = 9, W = 13, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 16, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.hardtanh(F.mish(F.conv_transpose2d(x, w, conv_bias, stride=2, padding=1, " ..
  "output_padding=1)) + 0.5, min_val=-1.0, max_val=1.0) * 2.0"
