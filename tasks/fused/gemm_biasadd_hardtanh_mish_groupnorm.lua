-- KernelBench Level 2, problem 94 (Gemm_BiasAdd_Hardtanh_Mish_GroupNorm), in
-- fp32: a linear layer, plus a second bias, HardTanh to [-1, 1], Mish,
-- GroupNorm with 256 groups.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_biasadd_hardtanh_mish_groupnorm"
compose = { ops.linear{}, ops.add_vec{ name = "bias2" }, ops.hardtanh{}, ops.mish{}, ops.groupnorm{ 256 } }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 512, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 94, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.group_norm(F.mish(F.hardtanh(F.linear(X, W, bias) + bias2, -1.0, 1.0)), 256, eps=1e-5)"
