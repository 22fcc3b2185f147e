-- bwd_racy: naive_bwd's plan, with two warps per query row for dQ.
local causal = dims.causal or 0
local scale = 1 / math.sqrt(D)
local grid = { cdiv(S, 4), B * H, 1 }
local block = { 128, 1, 1 }
return {
  launches = {
    { kernel = "attention_bwd_prep", grid = grid, block = block,
      args = { { buffer = "O" }, { buffer = "dO" }, { buffer = "Dsum" }, { u32 = S }, { u32 = D } } },
    { kernel = "attention_bwd_dq", grid = { cdiv(S, 2), B * H, 1 }, block = block,
      args = { { buffer = "Q" }, { buffer = "K" }, { buffer = "V" }, { buffer = "dO" }, { buffer = "LSE" },
               { buffer = "Dsum" }, { buffer = "dQ" }, { u32 = S }, { u32 = D }, { f32 = scale },
               { u32 = causal } } },
    { kernel = "attention_bwd_dkdv", grid = grid, block = block,
      args = { { buffer = "Q" }, { buffer = "K" }, { buffer = "V" }, { buffer = "dO" }, { buffer = "LSE" },
               { buffer = "Dsum" }, { buffer = "dK" }, { buffer = "dV" }, { u32 = S }, { u32 = D },
               { f32 = scale }, { u32 = causal } } },
  },
}
