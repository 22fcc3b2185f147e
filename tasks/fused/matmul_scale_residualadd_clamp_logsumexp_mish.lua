-- KernelBench Level 2, problem 22
-- (Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish), in fp32: a linear layer,
-- times 2, plus itself (x + x: times 2), clamped to [-10, 10], logsumexp over
-- the row, then x·mish(x).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_scale_residualadd_clamp_logsumexp_mish"
compose = { ops.linear{}, ops.scale{ 2.0 }, ops.scale{ 2 }, ops.clamp{ -10, 10 }, ops.logsumexp{}, ops.mish_gate{} }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 22, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "(z := torch.logsumexp(torch.clamp((h := F.linear(X, W, bias) * 2.0) + h, -10.0, 10.0), dim=1, keepdim=True)) * F.mish(z)"
