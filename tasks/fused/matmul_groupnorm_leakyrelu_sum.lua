-- KernelBench Level 2, problem 62 (Matmul_GroupNorm_LeakyReLU_Sum), in fp32: a
-- linear layer, GroupNorm with 512 groups, LeakyReLU, plus itself (x + x:
-- times 2).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_groupnorm_leakyrelu_sum"
compose = { ops.linear{}, ops.groupnorm{ 512 }, ops.leaky_relu{ 0.01 }, ops.scale{ 2 } }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 1024, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 62, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "(g := F.leaky_relu(F.group_norm(F.linear(X, W, bias), 512, eps=1e-5), 0.01)) + g"
