-- One program (a block of 8 warps) per row; BLOCK columns per step.
return {
  launches = {
    { kernel = "softmax", grid = R, args = { "X", "Y", i32(C) }, constexprs = { BLOCK = 2048 }, num_warps = 8 },
  },
}
