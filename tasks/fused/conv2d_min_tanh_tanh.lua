-- KernelBench Level 2, problem 25 (Conv2d_Min_Tanh_Tanh), in fp32: nn.Conv2d
-- (3 x 3, with its bias), torch.min over the channels (dim 1, keepdim),
-- then tanh twice.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_min_tanh_tanh"
compose = { ops.conv2d{ kernel = 3 }, ops.channel_min{}, ops.tanh{}, ops.tanh{} }
variants = {
  { name = "n16_c16_128x128_k64", N = 16, C = 16, H = 128, W = 128, K = 64, tags = { "main" } },
  { name = "kb25", N = 128, C = 16, H = 256, W = 256, K = 64, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 25, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference): torch.min
-- over a dim written as torch.amin (the same values).
oracle = "torch.tanh(torch.tanh(torch.amin(F.conv2d(x, w, conv_bias), dim=1, keepdim=True)))"
