-- KernelBench Level 2, problem 66 (Matmul_Dropout_Softmax), in fp32: a linear
-- layer, dropout, softmax over the row. KernelBench's module runs dropout in
-- training mode, which draws random masks and cannot be checked against any
-- reference; klab computes it in evaluation mode (the identity), so the task
-- is linear + softmax.
-- A composed task (klab.task.compose; docs/tasks.md, "Composed tasks"):
-- its buffers, reference, baseline, tolerance and counts follow from the chain.
name = "matmul_dropout_softmax"
compose = { ops.linear{}, ops.softmax{} }
variants = {
  { M = 128, N = 16384, K = 16384, tags = { "main", "kernelbench" } },
  { M = 123, N = 457, K = 789, tags = { "odd", "small" } },
}
tags = { "kernelbench-l2" }

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 2, problem = 66, differs = "dropout in evaluation mode (the identity); KernelBench's runs it in training mode (p = 0.2, random masks)" }
