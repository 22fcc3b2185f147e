-- KernelBench Level 2, problem 63 (Gemm_ReLU_Divide), in fp32: a linear layer,
-- ReLU, divided by 2.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_relu_divide"
compose = { ops.linear{}, ops.relu{}, ops.div{ 2.0 } }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 63, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.relu(F.linear(X, W, bias)) / 2.0"
