-- KernelBench Level 2, problem 37 (Matmul_Swish_Sum_GroupNorm), in fp32: a
-- linear layer, Swish, plus a second bias bias2[N], GroupNorm with 64 groups.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_swish_sum_groupnorm"
compose = { ops.linear{}, ops.silu{}, ops.add_vec{ name = "bias2" }, ops.groupnorm{ 64 } }
variants = {
  { M = 32768, N = 4096, K = 1024, tags = { "main", "kernelbench" } },
  { M = 123, N = 448, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 37, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.group_norm(torch.sigmoid(h := F.linear(X, W, bias)) * h + bias2, 64, eps=1e-5)"
