-- KernelBench Level 2, problem 40 (Matmul_Scaling_ResidualAdd), in fp32: a
-- linear layer times 0.5 plus the layer's output (x·0.5 + x).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_scaling_residualadd"
compose = { ops.linear{}, ops.scale{ 0.5 }, ops.residual{} }
variants = {
  { M = 16384, N = 4096, K = 4096, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 40, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "(h := F.linear(X, W, bias)) * 0.5 + h"
