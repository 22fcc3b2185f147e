-- KernelBench Level 3, problem 2 (ShallowWideMLP): two hidden layers of 32768 units,
-- ReLU after each, then the output layer; in fp32, as a task of several
-- kernels (one launch per layer by default). See _mlp.lua.
local mlp = include "_mlp.lua"

mlp.define(_ENV, { name = "shallow_wide_mlp_f32", layers = 2, what = "KernelBench's ShallowWideMLP (Level 3, problem 2)",
  variants = {
    { name = "128x16384x32768x16384", M = 128, I = 16384, H = 32768, O = 16384, tags = { "main", "kernelbench" } },
    { name = "37x4096x4096x1000", M = 37, I = 4096, H = 4096, O = 1000, tags = { "odd", "small" } },
  } })

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 3, problem = 2, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference): the layers
-- nested, innermost first.
local h = "x"
for l = 1, 2 do h = ("torch.relu(F.linear(%s, W%d, b%d))"):format(h, l, l) end
oracle = ("F.linear(%s, W%d, b%d)"):format(h, 2 + 1, 2 + 1)
