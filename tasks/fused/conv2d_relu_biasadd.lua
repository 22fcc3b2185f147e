-- KernelBench Level 2, problem 1 (Conv2D_ReLU_BiasAdd), in fp32: nn.Conv2d (3 x
-- 3, with its bias), ReLU, then a parameter of shape [K, 1, 1] added.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_relu_biasadd"
compose = { ops.conv2d{ kernel = 3 }, ops.relu{}, ops.add_vec{ name = "bias" } }
variants = {
  { name = "n16_c64_128x128_k128", N = 16, C = 64, H = 128, W = 128, K = 128, tags = { "main" } },
  { name = "kb1", N = 128, C = 64, H = 128, W = 128, K = 128, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 1, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.relu(F.conv2d(x, w, conv_bias)) + bias[:, None, None]"
