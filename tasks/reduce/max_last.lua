-- Row maxima in fp32: Y[r] = max of X[r, :].
-- _family.lua defines the shapes, inputs, tolerances, reference, baseline and plan.
local F = include "_family.lua"
F.define(_ENV, { name = "max_last_f32", op = "max", axis = "last" })

-- A maximum is exact in any order: see TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.max,
}
