-- KernelBench Level 2, problem 68 (Matmul_Min_Subtract), in fp32: a linear
-- layer, min(x, 2), minus 2.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_min_subtract"
compose = { ops.linear{}, ops.min{ 2.0 }, ops.sub{ 2.0 } }
variants = {
  { M = 128, N = 16384, K = 16384, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 68, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.clamp(F.linear(X, W, bias), max=2.0) - 2.0"
