-- What the cross-entropy tasks share (cross_entropy.lua: per-row losses of
-- bf16 logits; cross_entropy_mean_f32.lua: KernelBench's mean over rows of
-- fp32 ones): integer targets T[R] in int32, their inputs and hidden input
-- sets, and the reference's derive step. Task files take it with
-- `local CE = include "_cross_entropy.lua"` and `CE.define(_ENV)`.
local CE = {}

-- The reference's derive step: each target reduced modulo C (ce_targets).
CE.DERIVE = [[
return { launches = { { kernel = "ce_targets", grid = { cdiv(R, 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("T"), u64(R), u32(C) } } } }
]]

function CE.define(env)
  local _ENV = env
  -- T is drawn on [0, 2^30) and reduced modulo C by the reference's derive
  -- step (an input law cannot name the variant's C), so targets cover every
  -- class.
  inputs = {
    X = { dist = "normal", mean = 0, std = 1 },
    T = { dist = "int", lo = 0, hi = 1073741823 },
  }

  -- KernelBench-Verified's scaled logits (x3, x0.01, x-1) and PTXBench's
  -- spiky mix; logits shifted to about 100, where exp(x) without the maximum
  -- subtracted overflows fp32 (Inf); rows with a lone peak of hundreds
  -- (spikes of std 300, about one a row at C = 1000), where a maximum that
  -- misses the peak overflows the same way; and wide logits, N(0, 20²), where
  -- exp(x - max) underflows to 0 for the smallest classes, so that a loss
  -- taken as -log(softmax) of such a target is Inf. The losses' rounding
  -- error does not grow with the logits' scale beyond fp32's relative one:
  -- tol_scale 1.
  trials = 2
  distributions = {
    { name = "randn" },
    { name = "x3", scale = 3 },
    { name = "x0.01", scale = 0.01 },
    { name = "neg", scale = -1 },
    { name = "spiky", inputs = { X = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
    { name = "shifted", inputs = { X = { dist = "normal", mean = 100, std = 1 } } },
    { name = "peaked", inputs = { X = { dist = "spiky", std = 1, spike_std = 300, p = 0.001 } } },
    { name = "wide", inputs = { X = { dist = "normal", mean = 0, std = 20 } } },
  }
end

return CE
