-- triton_fwd: one program (8 warps) per 128 query rows of one (batch, head),
-- 64 keys per step; any S, D a multiple of 8 up to 128. dims.causal is 1 on
-- the causal tasks.
if D % 8 ~= 0 or D > 128 then error("triton_fwd needs D a multiple of 8 up to 128, not " .. D) end
local BD = 16
while BD < D do BD = BD * 2 end
return {
  launches = {
    { kernel = "attention_fwd", grid = { cdiv(S, 128), B * H, 1 },
      args = { "Q", "K", "V", "O", "LSE", i32(S), f32(1 / math.sqrt(D)) },
      constexprs = { D = D, BD = BD, BM = 128, BN = 64, CAUSAL = (dims.causal or 0) == 1 },
      num_warps = 8, num_stages = 3 },
  },
}
