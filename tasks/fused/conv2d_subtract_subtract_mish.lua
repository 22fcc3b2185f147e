-- KernelBench Level 2, problem 87 (Conv2d_Subtract_Subtract_Mish), in fp32:
-- nn.Conv2d (3 x 3, with its bias), minus 0.5, minus 0.2, Mish.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_subtract_subtract_mish"
compose = { ops.conv2d{ kernel = 3 }, ops.sub{ 0.5 }, ops.sub{ 0.2 }, ops.mish{} }
variants = {
  { name = "n32_c8_256x256_k64", N = 32, C = 8, H = 256, W = 256, K = 64, tags = { "main" } },
  { name = "kb87", N = 128, C = 8, H = 256, W = 256, K = 64, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 87, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.mish(F.conv2d(x, w, conv_bias) - 0.5 - 0.2)"
