-- cute_fwd: a block of 8 warps per 8 query rows of one (batch, head), 64 keys
-- per shared-memory tile; any S, D <= 128. dims.causal is 1 on the causal tasks.
if D > 128 then error("cute_fwd supports D <= 128, not " .. D) end
return {
  launches = {
    { kernel = "attention_fwd",
      grid = { cdiv(S, 8), B * H, 1 }, block = { 256, 1, 1 }, shared = 0,
      args = { { buffer = "Q" }, { buffer = "K" }, { buffer = "V" }, { buffer = "O" }, { buffer = "LSE" },
               { u32 = S }, { u32 = D }, { f32 = 1 / math.sqrt(D) }, { u32 = dims.causal or 0 } } },
  },
}
