-- KernelBench Level 2, problem 29 (Matmul_Mish_Mish), in fp32: a linear layer,
-- then Mish twice.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_mish_mish"
compose = { ops.linear{}, ops.mish{}, ops.mish{} }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 29, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.mish(F.mish(F.linear(X, W, bias)))"
