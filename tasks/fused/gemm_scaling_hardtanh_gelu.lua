-- KernelBench Level 2, problem 53 (Gemm_Scaling_Hardtanh_GELU), in fp32: a
-- linear layer, times 0.5, HardTanh to [-2, 2], GELU.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_scaling_hardtanh_gelu"
compose = { ops.linear{}, ops.scale{ 0.5 }, ops.hardtanh{ -2, 2 }, ops.gelu{} }
variants = {
  { M = 2048, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 53, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.gelu(F.hardtanh(F.linear(X, W, bias) * 0.5, -2.0, 2.0))"
