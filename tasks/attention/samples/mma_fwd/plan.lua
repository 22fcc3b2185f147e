-- mma_fwd: 128 threads per 64 query rows of one (batch, head); the entry
-- point is chosen by the head dimension. Needs S % 64 == 0.
local kernel = ({ [64] = "attention_fwd_d64", [96] = "attention_fwd_d96", [128] = "attention_fwd_d128" })[D]
if not kernel then error("mma_fwd supports D = 64, 96 or 128, not " .. D) end
if S % 64 ~= 0 then error("mma_fwd needs S % 64 == 0, got S = " .. S) end
local causal = dims.causal or 0
return {
  launches = {
    { kernel = kernel,
      grid = { S // 64, B * H, 1 }, block = { 128, 1, 1 },
      shared = 2 * (128 * (D + 8) + D * 72),
      args = { { buffer = "Q" }, { buffer = "K" }, { buffer = "V" }, { buffer = "O" }, { buffer = "LSE" },
               { u32 = S }, { f32 = 1.4426950408889634 / math.sqrt(D) }, { u32 = causal } } },
  },
}
