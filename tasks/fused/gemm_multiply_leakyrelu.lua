-- KernelBench Level 2, problem 12 (Gemm_Multiply_LeakyReLU), in fp32: a linear
-- layer, times 2, LeakyReLU with slope 0.1.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_multiply_leakyrelu"
compose = { ops.linear{}, ops.scale{ 2.0 }, ops.leaky_relu{ 0.1 } }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 12, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.leaky_relu(F.linear(X, W, bias) * 2.0, 0.1)"
