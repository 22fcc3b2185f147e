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

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.gelu(F.gelu(F.leaky_relu(F.leaky_relu(torch.logsumexp(F.linear(X, W, bias), dim=1, keepdim=True), 0.01), 0.01)))"
