-- KernelBench Level 2, problem 51
-- (Gemm_Subtract_GlobalAvgPool_LogSumExp_GELU_ResidualAdd), in fp32: a linear
-- layer minus a parameter vector (the input `subtract`, subtracted as
-- KernelBench does), the row's mean, logsumexp of one value, GELU, plus the
-- layer's input X: Y is [M, K].
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_subtract_globalavgpool_logsumexp_gelu_residualadd"
compose = { ops.linear{}, ops.sub_vec{ name = "subtract" }, ops.mean{}, ops.logsumexp{}, ops.gelu{}, ops.add_x{} }
variants = {
  { M = 2048, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 51, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.gelu(torch.logsumexp(torch.mean(F.linear(X, W, bias) - subtract, dim=1, keepdim=True), dim=1, keepdim=True)) + X"
