-- KernelBench Level 2, problem 88 (Gemm_GroupNorm_Swish_Multiply_Swish), in
-- fp32: a linear layer, GroupNorm with 256 groups, Swish, times a weight
-- vector, Swish.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_groupnorm_swish_multiply_swish"
compose = { ops.linear{}, ops.groupnorm{ 256 }, ops.silu{}, ops.mul_vec{ name = "multiply_weight" }, ops.silu{} }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 512, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 88, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "(g := (n := F.group_norm(F.linear(X, W, bias), 256, eps=1e-5)) * torch.sigmoid(n) * multiply_weight) * torch.sigmoid(g)"
