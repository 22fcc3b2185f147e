-- KernelBench Level 3, problem 3 (DeepNarrowMLP): sixteen hidden layers of 1024 units,
-- ReLU after each, then the output layer; in fp32, as a task of several
-- kernels (one launch per layer by default). See _mlp.lua.
local mlp = include "_mlp.lua"

mlp.define(_ENV, { name = "deep_narrow_mlp_f32", layers = 16, what = "KernelBench's DeepNarrowMLP (Level 3, problem 3)",
  variants = {
    { name = "1024x8192x1024x8192", M = 1024, I = 8192, H = 1024, O = 8192, tags = { "main", "kernelbench" } },
    { name = "37x1000x1024x1000", M = 37, I = 1000, H = 1024, O = 1000, tags = { "odd", "small" } },
  } })

-- The KernelBench problem this task poses (docs/kernelbench.md).
kernelbench = { level = 3, problem = 3, exact = true }

-- KernelBench's semantics as one PyTorch expression (klab.task.oracle;
-- tests/gpu/oracle_check.lua compares it with the reference): the layers
-- nested, innermost first.
local h = "x"
for l = 1, 16 do h = ("torch.relu(F.linear(%s, W%d, b%d))"):format(h, l, l) end
oracle = ("F.linear(%s, W%d, b%d)"):format(h, 16 + 1, 16 + 1)
