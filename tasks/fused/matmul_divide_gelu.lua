-- KernelBench Level 2, problem 86 (Matmul_Divide_GELU), in fp32: a linear
-- layer divided by 10, GELU.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_divide_gelu"
compose = { ops.linear{}, ops.div{ 10.0 }, ops.gelu{} }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 86, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.gelu(F.linear(X, W, bias) / 10.0)"
