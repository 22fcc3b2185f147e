-- KernelBench Level 2, problem 81 (Gemm_Swish_Divide_Clamp_Tanh_Clamp), in
-- fp32: a linear layer, Swish, halved, clamped to [-1, 1], tanh, clamped
-- again.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_swish_divide_clamp_tanh_clamp"
compose = { ops.linear{}, ops.silu{}, ops.div{ 2.0 }, ops.clamp{ -1, 1 }, ops.tanh{}, ops.clamp{ -1, 1 } }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 81, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.clamp(torch.tanh(torch.clamp((h := F.linear(X, W, bias)) * torch.sigmoid(h) / 2.0, -1.0, 1.0)), -1.0, 1.0)"
