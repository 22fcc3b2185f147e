-- Row sums in fp32: Y[r] = sum over X[r, :].
-- _family.lua defines the shapes, inputs, tolerances, reference, baseline and plan.
local F = include "_family.lua"
F.define(_ENV, { name = "sum_last_f32", op = "sum", axis = "last" })

-- fp32 summation in any order passes, narrowed inputs fail: see
-- TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.sum,
}
