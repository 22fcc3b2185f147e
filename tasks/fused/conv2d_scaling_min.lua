-- KernelBench Level 2, problem 32 (Conv2d_Scaling_Min), in fp32: nn.Conv2d
-- (3 x 3, with its bias), times 2, then torch.min over the channels (dim 1,
-- keepdim).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_scaling_min"
compose = { ops.conv2d{ kernel = 3 }, ops.scale{ 2.0 }, ops.channel_min{} }
variants = {
  { name = "n16_c64_128x128_k128", N = 16, C = 64, H = 128, W = 128, K = 128, tags = { "main" } },
  { name = "kb32", N = 64, C = 64, H = 256, W = 256, K = 128, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 32, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference): torch.min
-- over a dim written as torch.amin (the same values).
oracle = "torch.amin(F.conv2d(x, w, conv_bias) * 2.0, dim=1, keepdim=True)"
