-- KernelBench Level 2, problem 5 (ConvTranspose2d_Subtract_Tanh), in fp32:
-- nn.ConvTranspose2d (4 x 4, stride 2, padding 1, output padding 1), a
-- parameter of shape [K, 1, 1] subtracted, tanh.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "convtranspose2d_subtract_tanh"
compose = { ops.conv_transpose2d{ kernel = 4, stride = 2, padding = 1, output_padding = 1 }, ops.sub_vec{ name = "bias" },
  ops.tanh{} }
variants = {
  { name = "n16_c64_128x128_k64", N = 16, C = 64, H = 128, W = 128, K = 64, tags = { "main" } },
  { name = "kb5", N = 32, C = 64, H = 256, W = 256, K = 64, tags = { "kernelbench" } },
  { name = "n3_c5_9x13_k6", N = 3, C = 5, H = 9, W = 13, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 5, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.tanh(F.conv_transpose2d(x, w, conv_bias, stride=2, padding=1, output_padding=1) - bias[:, " ..
  "None, None])"
