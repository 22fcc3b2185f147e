-- Row log-softmax in bf16: Y[r, :] = log_softmax(X[r, :]), fp32 arithmetic
-- inside, bf16 in and out. The softmax family's second task: its reference
-- is logsoftmax_ref in reference.cu, its baseline logsoftmax_baseline in
-- baseline.cu.

local F = include "_family.lua"
F.define(_ENV, { name = "logsoftmax_bf16", op = "logsoftmax", tags = { "softmax", "logsoftmax", "bf16", "memory-bound" } })

description = [[
Write a CUDA kernel named `logsoftmax` that computes a log-softmax over each
row of X[R, C] (row-major, bf16 as __nv_bfloat16 bit patterns): Y[r, c] =
X[r, c] - m_r - log(sum_j exp(X[r, j] - m_r)), with m_r the row's maximum,
written as bf16 (round to nearest even). Rows may spread far wider than
exp's range in fp32: do not form log(exp(...)). Here R=${R}, C=${C}.
With the default launch plan the kernel is
  extern "C" __global__ void logsoftmax(const __nv_bfloat16 *X, __nv_bfloat16 *Y, unsigned R, unsigned C)
launched with one block of 256 threads per row (grid (R, 1, 1)) and no
dynamic shared memory. Send your own plan to change any of this.]]

-- The family's inputs (_family.lua), and wide rows, N(0, 20²), whose
-- smallest elements lie 120 and more below the maximum, where exp(x - max)
-- underflows to 0 in fp32 (below about -104): a kernel that takes the log
-- of the softmax writes -Inf there. The output's error does not grow with
-- the input's scale (it is dominated by the bf16 rounding of y).
distributions = F.distributions {
  { name = "wide", inputs = { X = { dist = "normal", mean = 0, std = 20 } } },
}

-- Outputs are at most 0 and mostly near -log(C) (about -10): one bf16
-- rounding is within 2^-8 ≈ 0.4% of the value, so rtol = 1e-2 passes any
-- honest fp32 computation. Near 0 (the dominant element of a peaked row)
-- fp32 loses about 1e-7 in log(sum) and atol = 1e-4 leaves a wide margin,
-- while log of a bf16-rounded probability misses by up to 2e-3 there.
tolerance = {
  bf16 = { atol = 1e-4, rtol = 1e-2, matched = 1.0 },
}

reference = F.reference("logsoftmax", [[buffer("X"), buffer("positions"), buffer("Y"), u32(C)]])

-- A kernel shipped with the task, as for softmax: cuDNN's graph API can
-- describe log-softmax as one graph (MAX, SUB, EXP, ADD, LOG, SUB), and
-- klab.dnn.graph_describe accepts it without a GPU, but it lists the same
-- three FALLBACK engines for any pointwise/reduction graph, however
-- contrived, so that proves nothing; a graph whose reduced results feed
-- pointwise operations over the full rows is not a fusion pattern cuDNN
-- documents. tests/gpu/libs_check.lua probes the one-graph softmax on the
-- GPU; if cuDNN runs it, the graph can replace this kernel.
baseline = F.baseline("logsoftmax", "block-per-row log-softmax")

-- Why the baseline stays short of the physical floor (docs/tasks.md gives
-- its fraction on an H200).
baseline.floor_note = "a block per row reads the row twice (statistics, then outputs): 57% of the DRAM floor on 16384x16384 and 23% on 65536x4096 on an H200; a one-pass kernel is owed"

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 24, exact = true, note = "bf16" }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "torch.log_softmax(X, dim=1)"
