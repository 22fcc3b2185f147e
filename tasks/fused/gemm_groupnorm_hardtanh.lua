-- KernelBench Level 2, problem 30 (Gemm_GroupNorm_Hardtanh), in fp32: a linear
-- layer, GroupNorm with 16 groups (weight 1, bias 0: torch's initial values),
-- HardTanh to [-2, 2].
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_groupnorm_hardtanh"
compose = { ops.linear{}, ops.groupnorm{ 16 }, ops.hardtanh{ -2.0, 2.0 } }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 464, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 30, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.hardtanh(F.group_norm(F.linear(X, W, bias), 16, eps=1e-5), -2.0, 2.0)"
