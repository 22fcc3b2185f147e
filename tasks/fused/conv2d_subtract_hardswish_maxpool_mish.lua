-- KernelBench Level 2, problem 35 (Conv2d_Subtract_HardSwish_MaxPool_Mish), in
-- fp32: nn.Conv2d (3 x 3, with its bias), minus 0.5, HardSwish, MaxPool2d(2),
-- Mish.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_subtract_hardswish_maxpool_mish"
compose = { ops.conv2d{ kernel = 3 }, ops.sub{ 0.5 }, ops.hardswish{}, ops.maxpool2d{ 2 }, ops.mish{} }
variants = {
  { name = "n16_c64_128x128_k128", N = 16, C = 64, H = 128, W = 128, K = 128, tags = { "main" } },
  { name = "kb35", N = 128, C = 64, H = 128, W = 128, K = 128, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 35, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.mish(F.max_pool2d(F.hardswish(F.conv2d(x, w, conv_bias) - 0.5), 2))"
