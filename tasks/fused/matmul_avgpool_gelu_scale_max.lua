-- KernelBench Level 2, problem 98 (Matmul_AvgPool_GELU_Scale_Max), in fp32: a
-- linear layer, AvgPool1d with window 16 along the row, GELU, times 2, the
-- row's maximum: Y is [M, 1] (KernelBench's is [M]).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_avgpool_gelu_scale_max"
compose = { ops.linear{}, ops.avgpool{ 16 }, ops.gelu{}, ops.scale{ 2.0 }, ops.row_max{} }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 98, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.amax(F.gelu(F.avg_pool1d(F.linear(X, W, bias)[:, None, :], 16)[:, 0, :]) * 2.0, dim=1)"
