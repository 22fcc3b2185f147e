-- Max-pooling in 2-D, fp32, in PyTorch's NCHW layout (KernelBench Level 1,
-- problem 42): window 4 x 4, stride 1, padding 1, dilation 1, as KernelBench
-- sets them today. maxpool2d_f32 is the NHWC pooling of cuDNN's graphs.
-- _ncl.lua defines every field but the tolerance.
local F = include "_ncl.lua"
F.define(_ENV, { kind = "max", nd = 2, suffix = "_nchw", window = { K = 4, S = 1, P = 1, DL = 1 },
  kernelbench = { N = 32, C = 64, H = 512, W = 512 } })

-- See TOLERANCE in _ncl.lua.
tolerance = F.TOLERANCE.max

-- Why the baseline stays short of the physical floor.
baseline.floor_note = "a thread per output, no vector loads and no reuse of the overlapping windows (not measured yet on a GPU); a tiled kernel is owed"

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 42, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.max_pool2d(x, 4, stride=1, padding=1, dilation=1)"
