-- KernelBench Level 2, problem 18
-- (Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp), in fp32: a linear layer summed
-- over the row; the max, mean and two logsumexps after it each see one value
-- per row and return it (the chain is the row sum, which a kernel may notice).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_sum_max_avgpool_logsumexp_logsumexp"
compose = { ops.linear{}, ops.sum{}, ops.row_max{}, ops.mean{}, ops.logsumexp{}, ops.logsumexp{} }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 18, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.logsumexp(torch.logsumexp(torch.mean(torch.amax(torch.sum(F.linear(X, W, bias), dim=1, keepdim=True), dim=1, keepdim=True), dim=1, keepdim=True), dim=1, keepdim=True), dim=1, keepdim=True)"
