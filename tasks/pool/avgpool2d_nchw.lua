-- Average-pooling in 2-D, fp32, in PyTorch's NCHW layout (KernelBench Level
-- 1, problem 45): window 11 x 11 at stride 11 (KernelBench leaves the
-- stride to nn.AvgPool2d's default, the window), no padding. avgpool2d_f32
-- is the NHWC pooling of cuDNN's graphs. _ncl.lua defines every field but
-- the tolerance.
local F = include "_ncl.lua"
F.define(_ENV, { kind = "avg", nd = 2, suffix = "_nchw", window = { K = 11, S = 11, P = 0, DL = 1 },
  kernelbench = { N = 16, C = 64, H = 2048, W = 2048 } })

-- See TOLERANCE in _ncl.lua: an average of 121 fp32 values in any order is
-- within about 1e-6 relative of the fp64 one.
tolerance = F.TOLERANCE.avg

-- Why the baseline stays short of the physical floor.
baseline.floor_note = "a thread per output reading its 11 x 11 window row by row, no vector loads (not measured yet on a GPU)"

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 1, problem = 45, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference).
oracle = "F.avg_pool2d(x, 11)"
