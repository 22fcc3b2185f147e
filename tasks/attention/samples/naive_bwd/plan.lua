-- naive_bwd: three launches (row sums of dO*O into the task's Dsum scratch,
-- then dQ by query rows, then dK and dV by key rows), a warp per row, 4 rows
-- per block of 128 threads; any S, D <= 128.
local causal = dims.causal or 0
local scale = 1 / math.sqrt(D)
local grid = { cdiv(S, 4), B * H, 1 }
local block = { 128, 1, 1 }
return {
  launches = {
    { kernel = "attention_bwd_prep", grid = grid, block = block,
      args = { { buffer = "O" }, { buffer = "dO" }, { buffer = "Dsum" }, { u32 = S }, { u32 = D } } },
    { kernel = "attention_bwd_dq", grid = grid, block = block,
      args = { { buffer = "Q" }, { buffer = "K" }, { buffer = "V" }, { buffer = "dO" }, { buffer = "LSE" },
               { buffer = "Dsum" }, { buffer = "dQ" }, { u32 = S }, { u32 = D }, { f32 = scale },
               { u32 = causal } } },
    { kernel = "attention_bwd_dkdv", grid = grid, block = block,
      args = { { buffer = "Q" }, { buffer = "K" }, { buffer = "V" }, { buffer = "dO" }, { buffer = "LSE" },
               { buffer = "Dsum" }, { buffer = "dK" }, { buffer = "dV" }, { u32 = S }, { u32 = D },
               { f32 = scale }, { u32 = causal } } },
  },
}
