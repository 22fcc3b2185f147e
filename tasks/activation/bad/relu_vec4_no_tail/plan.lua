-- One thread per four elements.
local n = R * C
return { launches = { { kernel = "relu", grid = { cdiv(cdiv(n, 4), 256), 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("X"), buffer("Y"), u64(n) } } } }
