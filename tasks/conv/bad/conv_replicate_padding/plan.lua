-- conv_replicate_padding: one thread per element of y, 256 per block (as samples/naive_conv).
local OH, OW = (H + 2 * P - R) // U + 1, (W + 2 * P - S) // U + 1
return {
  launches = {
    { kernel = "conv2d", grid = { cdiv(N * OH * OW * K, 256), 1, 1 }, block = { 256, 1, 1 }, shared = 0,
      args = { buffer("x"), buffer("w"), buffer("y"), u32(N), u32(H), u32(W), u32(C), u32(K), u32(R), u32(S),
               u32(P), u32(U) } },
  },
}
