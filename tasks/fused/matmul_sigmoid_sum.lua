-- KernelBench Level 2, problem 56 (Matmul_Sigmoid_Sum), in fp32: a linear
-- layer, sigmoid, the row's sum: Y is [M, 1].
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_sigmoid_sum"
compose = { ops.linear{}, ops.sigmoid{}, ops.sum{} }
variants = {
  { M = 128, N = 32768, K = 32768, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 56, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.sum(torch.sigmoid(F.linear(X, W, bias)), dim=1, keepdim=True)"
