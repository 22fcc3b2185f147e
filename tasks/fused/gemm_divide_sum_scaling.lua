-- KernelBench Level 2, problem 14 (Gemm_Divide_Sum_Scaling), in fp32: x·Wᵀ
-- without a bias, halved, summed over the row, times 1.5: Y is [M, 1].
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_divide_sum_scaling"
compose = { ops.linear{ bias = false }, ops.div{ 2 }, ops.sum{}, ops.scale{ 1.5 } }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 14, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.sum(X @ W.T / 2, dim=1, keepdim=True) * 1.5"
