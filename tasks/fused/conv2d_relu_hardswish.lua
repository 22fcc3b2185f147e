-- KernelBench Level 2, problem 57 (Conv2d_ReLU_HardSwish), in fp32: nn.Conv2d
-- (3 x 3, with its bias), ReLU, then x·clamp((x + 3)/6, 0, 1) (HardSwish).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_relu_hardswish"
compose = { ops.conv2d{ kernel = 3 }, ops.relu{}, ops.hardswish{} }
variants = {
  { name = "n32_c8_128x128_k64", N = 32, C = 8, H = 128, W = 128, K = 64, tags = { "main" } },
  { name = "kb57", N = 128, C = 8, H = 128, W = 128, K = 64, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 57, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "(h := torch.relu(F.conv2d(x, w, conv_bias))) * torch.clamp((h + 3) / 6, 0, 1)"
