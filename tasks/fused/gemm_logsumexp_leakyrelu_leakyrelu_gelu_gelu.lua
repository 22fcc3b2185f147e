-- KernelBench Level 2, problem 64
-- (Gemm_LogSumExp_LeakyReLU_LeakyReLU_GELU_GELU), in fp32: a linear layer,
-- logsumexp over the row, two LeakyReLUs and two GELUs of that value: Y is [M,
-- 1].
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_logsumexp_leakyrelu_leakyrelu_gelu_gelu"
compose = { ops.linear{}, ops.logsumexp{}, ops.leaky_relu{ 0.01 }, ops.leaky_relu{ 0.01 }, ops.gelu{}, ops.gelu{} }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 64, exact = true }
