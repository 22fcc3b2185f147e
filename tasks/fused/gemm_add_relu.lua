-- KernelBench Level 2, problem 76 (Gemm_Add_ReLU), in fp32: x·Wᵀ without the
-- layer's bias, plus a bias parameter, ReLU, in fp32 (linear_relu_bf16 is the
-- same chain in bf16 with cuBLASLt's fused epilogue).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "gemm_add_relu"
compose = { ops.linear{ bias = false }, ops.add_vec{ name = "bias" }, ops.relu{} }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 76, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.relu(X @ W.T + bias)"
