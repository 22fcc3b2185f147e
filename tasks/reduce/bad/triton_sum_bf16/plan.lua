-- One program (a block of 4 warps) per row; BLOCK columns per step.
return {
  launches = {
    { kernel = "sum_last", grid = R, args = { "X", "Y", i32(C) }, constexprs = { BLOCK = 1024 }, num_warps = 4 },
  },
}
