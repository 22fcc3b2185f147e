-- What the LLM-serving task files share (tasks/llm/*.lua include it):
-- operations around a decoder layer of a served model, on [tokens, ...]
-- activations in bf16 with fp32 arithmetic inside.
local F = {}

-- PTXBench's spiky mix: N(0,1) + N(0,100)·Bern(0.001).
F.SPIKY = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 }

-- The base law, then KernelBench-Verified's x3, x0.01 and x-1 (every float
-- input scaled), with atol scaled by t3 and t001, then the task's own
-- entries.
function F.distributions(t3, t001, more)
  local d = {
    { name = "randn" },
    { name = "x3", scale = 3, tol_scale = t3 },
    { name = "x0.01", scale = 0.01, tol_scale = t001 },
    { name = "neg", scale = -1 },
  }
  for _, e in ipairs(more) do d[#d + 1] = e end
  return d
end

-- bf16 outputs: PTXBench's rule, atol = rtol = 1e-2, every element. A bf16
-- output holds 8 significant bits (rounding error up to 2^-9 = 0.2%), so
-- an fp32 computation rounded once, or rounded at a step or two inside (as
-- vLLM's and Hugging Face's kernels do), passes rtol; atol covers outputs
-- near zero, where the terms of a sum cancel. A wrong formula, layout or
-- convention misses by far more on most elements.
F.BF16 = { atol = 1e-2, rtol = 1e-2, matched = 1.0 }

-- Memory-bound: no target instruction family to verify.
F.targets = {}

return F
