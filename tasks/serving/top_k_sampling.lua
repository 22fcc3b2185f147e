-- top-k sampling from probabilities (FlashInfer's top_k_sampling_from_probs), with the
-- uniform draws as an input. _sampling.lua defines every field and says why
-- the inputs are whole grains of 2^-16.
local S = include "_sampling.lua"
S.define(_ENV, "top_k")
