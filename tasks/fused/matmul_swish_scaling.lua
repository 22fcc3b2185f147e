-- KernelBench Level 2, problem 59 (Matmul_Swish_Scaling), in fp32: a linear
-- layer, Swish, times 2.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_swish_scaling"
compose = { ops.linear{}, ops.silu{}, ops.scale{ 2.0 } }
variants = {
  { M = 128, N = 32768, K = 32768, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 59, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "(h := F.linear(X, W, bias)) * torch.sigmoid(h) * 2.0"
