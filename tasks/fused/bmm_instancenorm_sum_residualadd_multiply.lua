-- KernelBench Level 2, problem 28 (BMM_InstanceNorm_Sum_ResidualAdd_Multiply),
-- in fp32: a linear layer; KernelBench's InstanceNorm2d over the [M,1,1,N]
-- view normalises each row (one group of N, no affine); plus y, times y for a
-- second input y[M,N] (KernelBench draws both inputs from U(0,1); klab from
-- its own distributions).
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "bmm_instancenorm_sum_residualadd_multiply"
compose = { ops.linear{}, ops.groupnorm{ 1 }, ops.add_mat{ name = "y" }, ops.mul_mat{ name = "y" } }
variants = {
  { M = 1024, N = 8192, K = 8192, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 28, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "(F.instance_norm(F.linear(X, W, bias)[:, None, None, :], eps=1e-5)[:, 0, 0, :] + y) * y"
