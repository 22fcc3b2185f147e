-- Max-pooling in 3-D, fp32, in PyTorch's layout (KernelBench Level 1,
-- problem 43): window 3, stride 2, padding 1, dilation 3, as KernelBench
-- sets them. _ncl.lua defines every field but the tolerance.
local F = include "_ncl.lua"
F.define(_ENV, { kind = "max", nd = 3, window = { K = 3, S = 2, P = 1, DL = 3 },
  kernelbench = { N = 16, C = 32, D = 128, H = 128, W = 128 } })

-- See TOLERANCE in _ncl.lua.
tolerance = F.TOLERANCE.max

-- Why the baseline stays short of the physical floor (docs/tasks.md gives
-- its fraction on an H200).
baseline.floor_note = "a thread per output, no vector loads and no reuse of the overlapping windows: about a quarter of the DRAM floor on an H200; a tiled kernel is owed"

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 43, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.max_pool3d(x, 3, stride=2, padding=1, dilation=3)"
