-- KernelBench Level 2, problem 55 (Matmul_MaxPool_Sum_Scale), in fp32: a
-- linear layer, MaxPool1d with window 2 along the row, the row's sum, times
-- 0.5: Y is [M, 1] (KernelBench's is [M]).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_maxpool_sum_scale"
compose = { ops.linear{}, ops.maxpool{ 2 }, ops.sum{}, ops.scale{ 0.5 } }
variants = {
  { M = 128, N = 32768, K = 32768, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 55, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.sum(F.max_pool1d(F.linear(X, W, bias)[:, None, :], 2)[:, 0, :], dim=1) * 0.5"
