-- One thread per element, 256 a block (the block is the kernel's .reqntid).
return { launches = { { kernel = "relu", grid = cdiv(R * C, 256), args = { "X", "Y" } } } }
