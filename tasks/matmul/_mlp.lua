-- What the MLP task files share (KernelBench Level 3's MLP, ShallowWideMLP
-- and DeepNarrowMLP): a stack of nn.Linear layers in fp32, ReLU after every
-- one but the last, as one task of several kernels. L hidden layers of H
-- units: layer 1 maps x[M, I] to H, layers 2..L map H to H, layer L+1 maps
-- H to O. Each layer l has its own weight W<l> (as torch's nn.Linear stores
-- it, [out, in]) and bias b<l>; the number of layers is the task's, the
-- sizes the variant's (M, I, H, O).
--
-- The reference runs matmul/reference.cu's mm_ref once per layer, every
-- hidden layer's output kept in fp64 (its ReLU applied in fp64), the last
-- layer written as fp32 (a sampled check recomputes the hidden layers in
-- full and the last layer at the sampled elements). The baseline is one
-- cuBLASLt call per layer (RELU_BIAS, the last BIAS), the calls PyTorch
-- eager makes, each into the baseline's workspace, then a copy into y.
local F = {}

-- x ~ U(0, 1), as KernelBench's torch.rand. W<l> ~ N(0, 2/fan) for the fan
-- in of the first variant (He's scale), so that a hidden layer's outputs
-- keep a standard deviation near 1 through every ReLU; a variant with a
-- smaller fan in sees them shrink by sqrt(fan/fan₁) per layer, which is
-- why the deep task's variants keep H. The biases ~ N(0, 0.1²).
local function inputs(L, v1)
  local t = { x = { dist = "uniform", lo = 0, hi = 1 } }
  for l = 1, L + 1 do
    local fan = l == 1 and v1.I or v1.H
    t["W" .. l] = { dist = "normal", mean = 0, std = math.sqrt(2 / fan) }
    t["b" .. l] = { dist = "normal", mean = 0, std = 0.1 }
  end
  return t
end

-- fp32 products over up to 32768 terms, L + 1 times: an honest fp32 kernel
-- is within about 1e-5 of the fp64 reference; atol = rtol = 1e-3
-- (KernelBench-Verified's fp32 tolerance) passes it and fails TF32 inputs.
F.tolerance = { f32 = { atol = 1e-3, rtol = 1e-3, matched = 1.0 } }

-- Layer l's (input width, output width) as dimension names.
local function widths(l, L)
  return l == 1 and "I" or "H", l == L + 1 and "O" or "H"
end

-- Sets every field of an MLP task in env. t = { name =, layers = L (hidden
-- layers), what = (the model in words), variants = { {name=, M=, I=, H=,
-- O=, tags=}, ... } }.
function F.define(env, t)
  local L = t.layers
  env.name, env.family, env.kernel = t.name, "matmul", "linear_layer"
  env.tags = { "matmul", "f32", "mlp", "multi-kernel" }
  env.dims = { "M", "I", "H", "O" }
  env.variants = t.variants
  env.buffers = { x = { role = "input", dtype = "f32", shape = { "M", "I" } },
                  y = { role = "output", dtype = "f32", shape = { "M", "O" } } }
  for l = 1, L + 1 do
    local win, wout = widths(l, L)
    env.buffers["W" .. l] = { role = "input", dtype = "f32", shape = { wout, win } }
    env.buffers["b" .. l] = { role = "input", dtype = "f32", shape = { wout } }
  end
  env.inputs = inputs(L, t.variants[1])
  env.trials = 2
  env.distributions = {
    { name = "rand" },
    { name = "x3", inputs = { x = { dist = "uniform", lo = 0, hi = 3 } }, tol_scale = 3 },
    { name = "spiky", inputs = { x = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
  }
  env.tolerance = F.tolerance
  -- The reference: ping-pong fp64 workspaces P and Q of M x H.
  env.reference = { source = "reference.cu", accumulate = "f64", plan = ([[
local L = %d
local ws = { P = { bytes = 8 * M * H }, Q = { bytes = 8 * M * H } }
local launches = {}
local src, dst = nil, "P"
for l = 1, L do
  local K = l == 1 and I or H
  launches[#launches + 1] = { kernel = "mm_ref", grid = { cdiv(H, 64), cdiv(M, 64), 1 }, block = { 16, 16, 1 },
    args = { src and workspace(src) or buffer("x"), i32(src and 5 or 0), buffer("W" .. l), i32(0), buffer("b" .. l),
             i32(0), i32(1), workspace(dst), i32(5), u32(M), u32(H), u32(K), i32(0), i32(0) } }
  src, dst = dst, dst == "P" and "Q" or "P"
end
local last = { buffer("W" .. (L + 1)), i32(0), buffer("b" .. (L + 1)), i32(0), i32(0) }
if nsample > 0 then
  launches[#launches + 1] = { kernel = "mm_ref_units", grid = { cdiv(nsample, 4), 1, 1 }, block = { 128, 1, 1 },
    args = { workspace(src), i32(5), last[1], last[2], last[3], last[4], last[5], buffer("positions"), u64(nsample),
             buffer("y"), i32(0), u32(M), u32(O), u32(H), i32(0), i32(0) } }
else
  launches[#launches + 1] = { kernel = "mm_ref", grid = { cdiv(O, 64), cdiv(M, 64), 1 }, block = { 16, 16, 1 },
    args = { workspace(src), i32(5), last[1], last[2], last[3], last[4], last[5], buffer("y"), i32(0), u32(M), u32(O),
             u32(H), i32(0), i32(0) } }
end
return { workspace = ws, launches = launches }
]]):format(L) }
  -- The baseline: cuBLASLt per layer into the fp32 workspaces P and Q (the
  -- last into T), then a copy of T into y.
  local steps = {}
  local src, dst = "x", "P"
  for l = 1, L + 1 do
    local win, wout = widths(l, L)
    local into = l == L + 1 and "T" or dst
    local last = l == L + 1
    steps[l] = { lib = "cublaslt", op = "matmul", a = src, b = "W" .. l, c = into, modes = { "fp32" },
      spec = function(d)
        return { M = d.M, N = d[wout], K = d[win], epilogue = last and "bias" or "relu_bias", bias = "b" .. l,
          bias_dtype = "f32" }
      end }
    src, dst = dst, dst == "P" and "Q" or "P"
  end
  env.baseline = { source = "baseline.cu", name = "cuBLASLt's fp32 product per layer (RELU_BIAS, the last BIAS)",
    prologue = steps, plan = [[
return { workspace = { P = { bytes = 4 * M * H }, Q = { bytes = 4 * M * H }, T = { bytes = 4 * M * O } },
  launches = { { kernel = "copy_f32", grid = { math.min(cdiv(M * O, 256), 65536), 1, 1 }, block = { 256, 1, 1 },
    args = { workspace("T"), buffer("y"), u64(M * O) } } } }
]] }
  env.flops = function(d) return 2 * d.M * (d.I * d.H + (L - 1) * d.H * d.H + d.H * d.O) end
  env.work = 0.9
  env.targets = { sm_90a = { "tma" }, sm_100a = { "tma" } }
  -- The default plan: one kernel, launched once per layer.
  env.plan = ([[
-- Default plan: `linear_layer` once per layer, a block of 16 x 16 threads
-- per 16 x 16 tile of the layer's output; hidden outputs in the workspace
-- P and Q (M x H fp32 each).
local L = %d
local launches = {}
local src, dst = nil, "P"
for l = 1, L + 1 do
  local K, N = l == 1 and I or H, l == L + 1 and O or H
  launches[l] = { kernel = "linear_layer", grid = { cdiv(N, 16), cdiv(M, 16), 1 }, block = { 16, 16, 1 },
    args = { src and workspace(src) or buffer("x"), buffer("W" .. l), buffer("b" .. l),
             l == L + 1 and buffer("y") or workspace(dst), u32(M), u32(N), u32(K), i32(l == L + 1 and 0 or 1) } }
  src, dst = dst, dst == "P" and "Q" or "P"
end
return { workspace = { P = { bytes = 4 * M * H }, Q = { bytes = 4 * M * H } }, launches = launches }
]]):format(L)
  env.description = ([[
Write a CUDA kernel named `linear_layer` for %s: a stack of %d
linear layers (torch's nn.Linear) in fp32, ReLU after every one but the
last, as accurate as fp32 allows (no narrower intermediate; TF32 tensor
cores alone are not):
  h1 = relu(x·W1ᵀ + b1), h_l = relu(h_(l-1)·W_lᵀ + b_l) for l = 2..%d,
  y = h_%d·W%dᵀ + b%d
for x[M, I], W1[H, I], W2..W%d[H, H], W%d[O, H], biases b_l of the layer's
output width, y[M, O], all row-major (W as nn.Linear stores it). Here
M=${M}, I=${I}, H=${H}, O=${O}.
With the default launch plan the kernel is
  extern "C" __global__ void linear_layer(const float *X, const float *W,
      const float *b, float *Y, unsigned M, unsigned N, unsigned K, int relu)
computing Y[M, N] = X[M, K]·W[N, K]ᵀ + b (then ReLU where relu is 1),
launched once per layer with a grid of (ceil(N/16), ceil(M/16)) blocks of
16 x 16 threads, the hidden layers' outputs in workspace buffers. Send your
own plan to change any of this (several kernels, other tiles, a fused
pair of layers).]]):format(t.what, L + 1, L, L, L + 1, L + 1, L, L + 1)
end

return F
