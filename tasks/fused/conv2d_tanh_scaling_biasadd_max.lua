-- KernelBench Level 2, problem 82 (Conv2d_Tanh_Scaling_BiasAdd_Max), in fp32:
-- nn.Conv2d (3 x 3, with its bias), tanh, times 2, a parameter of shape [K, 1,
-- 1] added, MaxPool2d(4).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "conv2d_tanh_scaling_biasadd_max"
compose = { ops.conv2d{ kernel = 3 }, ops.tanh{}, ops.scale{ 2.0 }, ops.add_vec{ name = "bias" }, ops.maxpool2d{ 4 } }
variants = {
  { name = "n32_c8_256x256_k64", N = 32, C = 8, H = 256, W = 256, K = 64, tags = { "main" } },
  { name = "kb82", N = 128, C = 8, H = 256, W = 256, K = 64, tags = { "kernelbench" } },
  { name = "n3_c5_17x23_k6", N = 3, C = 5, H = 17, W = 23, K = 6, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 82, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.max_pool2d(torch.tanh(F.conv2d(x, w, conv_bias)) * 2.0 + bias[:, None, None], 4)"
