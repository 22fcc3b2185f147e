-- KernelBench Level 2, problem 80 (Gemm_Max_Subtract_GELU), in fp32: a linear
-- layer, the row's maximum, minus its own mean (one value: 0), GELU: Y is [M,
-- 1] and exactly 0 (a kernel may notice).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_max_subtract_gelu"
compose = { ops.linear{}, ops.row_max{}, ops.center{}, ops.gelu{} }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 80, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.gelu((m := torch.amax(F.linear(X, W, bias), dim=1, keepdim=True)) - m.mean(dim=1, keepdim=True))"
