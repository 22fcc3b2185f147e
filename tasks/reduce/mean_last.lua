-- Row means in fp32: Y[r] = mean of X[r, :].
-- _family.lua defines the shapes, inputs, tolerances, reference, baseline and plan.
local F = include "_family.lua"
F.define(_ENV, { name = "mean_last_f32", op = "mean", axis = "last" })

-- The sum's tolerance divided by the count: see TOLERANCE in _family.lua.
tolerance = {
  f32 = F.TOLERANCE.mean,
}
