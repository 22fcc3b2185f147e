-- KernelBench Level 2, problem 95 (Matmul_Add_Swish_Tanh_GELU_Hardtanh), in
-- fp32: a linear layer, plus a vector, Swish, tanh, GELU, HardTanh to [-1, 1].
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_add_swish_tanh_gelu_hardtanh"
compose = { ops.linear{}, ops.add_vec{ name = "add_value" }, ops.silu{}, ops.tanh{}, ops.gelu{}, ops.hardtanh{ -1, 1 } }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 95, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.hardtanh(F.gelu(torch.tanh(torch.sigmoid(h := F.linear(X, W, bias) + add_value) * h)), -1.0, 1.0)"
