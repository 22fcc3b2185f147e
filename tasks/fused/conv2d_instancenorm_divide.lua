-- KernelBench Level 2, problem 17 (Conv2d_InstanceNorm_Divide), in fp32:
-- nn.Conv2d (3 x 3, with its bias), nn.InstanceNorm2d (no affine, eps 1e-5:
-- GroupNorm of one group over a channel's plane), divided by 2.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_instancenorm_divide"
compose = { ops.conv2d{ kernel = 3 }, ops.groupnorm{ 1 }, ops.div{ 2.0 } }
variants = {
  { name = "n16_c64_128x128_k128", N = 16, C = 64, H = 128, W = 128, K = 128, tags = { "main" } },
  { name = "kb17", N = 128, C = 64, H = 128, W = 128, K = 128, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 17, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.instance_norm(F.conv2d(x, w, conv_bias), eps=1e-5) / 2.0"
