-- What the two MoE routing tasks share (moe_route_sigmoid_grouped.lua,
-- moe_route_softmax.lua): the router of a mixture-of-experts layer as
-- serving engines run it (vLLM's grouped_topk and fused_topk, FlashInfer-
-- Bench's DeepSeek routing inside its moe definitions) followed by the
-- permutation of tokens to experts: for each token the K experts and their
-- weights, and for each of its K assignments the row it takes in the
-- expert-sorted order that the grouped GEMM of the experts reads.
--
-- Exactness. The selections compare scores, and sums of two; a tie broken
-- by rounding would change an expert and every later destination. So the
-- inputs are made exact (derive, reference.cu): the logits lie on the grid
-- 0.064 + 0.5 i, i in [-8, 8] (17 values: equal logits give equal scores in
-- any fp32 code, different ones differ by a factor e^0.5 after a softmax,
-- and the sums of two sigmoids of the grid by at least 5.4e-4), and the
-- bias is 0 or 8. Ties are common (each value is held by many experts) and
-- the description states the rule.
local F = {}

-- Sets every field of the task in env. r: { name, kernel (the routing
-- kernel's name), scoring = "sigmoid" | "softmax", scale, what (the
-- description's routing text), variants }.
function F.define(env, r)
  local sigmoid = r.scoring == "sigmoid" and 1 or 0
  env.name = r.name
  env.family = "serving"
  env.kernel = r.kernel
  env.tags = { "serving", "moe", "routing", "f32", "memory-bound" }
  env.description = ([[
Write the router of a mixture-of-experts layer and its token permutation:
CUDA kernels `%s` and `moe_permute`. logits is fp32 [T, E] (row-major)
and bias fp32 [E] (a selection bias per expert). For each token t:
%s
Ties: between equal keys (or group scores) the lower expert (group) index
wins; they are common, since the logits take few distinct values.
Write topk_ids int32 [T, K] (the chosen experts in that order) and
topk_weights fp32 [T, K]. Then the permutation: number the assignments
a = t*K + k; the permuted order lists them by expert, and within an
expert in increasing a (so an expert's rows start at the number of
assignments to lower experts). Write dest int32 [T, K]: dest[t, k] = the
row of assignment t*K + k in that order. Loads are uneven: one expert may
take every token. Inputs must not be modified. Here T=${T}, E=${E}, K=${K},
G=${G}, TG=${TG}.
With the default launch plan the kernels are
  extern "C" __global__ void %s(const float *logits, const float *bias, int *topk_ids,
      float *topk_weights, unsigned T, unsigned E, unsigned K, unsigned G, unsigned TG)
launched with a grid of (ceil(T/128), 1, 1) blocks of 128 threads (a thread per token), then
  extern "C" __global__ void moe_permute(const int *topk_ids, int *dest, unsigned T, unsigned E,
      unsigned K)
launched with one block of 1024 threads; no dynamic shared memory. Send
your own plan to change any of this.]]):format(r.kernel, r.what, r.kernel)

  env.dims = { "T", "E", "K", "G", "TG" }
  env.variants = r.variants
  env.buffers = {
    logits = { role = "input", dtype = "f32", shape = { "T", "E" } },
    bias = { role = "input", dtype = "f32", shape = { "E" } },
    topk_ids = { role = "output", dtype = "i32", shape = { "T", "K" } },
    topk_weights = { role = "output", dtype = "f32", shape = { "T", "K" } },
    dest = { role = "output", dtype = "i32", shape = { "T", "K" } },
  }

  -- Logits N(0, 2²), folded to the grid by derive (most of the 17 values
  -- in use); the bias zero (Qwen3's router has none; DeepSeek-V3's
  -- correction bias is learned, and zero keeps the loads near balance).
  env.inputs = {
    logits = { dist = "normal", mean = 0, std = 2 },
    bias = { dist = "const", value = 0 },
  }

  -- Then one hot expert (the bias drawn as integers: derive gives expert
  -- bias[0] mod E a bias of 8, so every token picks it and the loads are
  -- as uneven as they get), and narrow logits (N(0, 0.5²): two or three
  -- grid values, nearly every comparison a tie).
  env.trials = 2
  env.distributions = {
    { name = "randn" },
    { name = "hot_expert", inputs = { bias = { dist = "int", lo = 1, hi = 1 << 20 } } },
    { name = "narrow", inputs = { logits = { dist = "normal", mean = 0, std = 0.5 } } },
  }

  -- Ids and destinations are exact. Weights: an fp32 score over an fp32 sum
  -- is within a few units of 2^-24 of the fp64 reference's; 1e-5 leaves
  -- room for a softmax's sum in any order, and a wrong expert's weight
  -- misses by far more.
  env.tolerance = {
    i32 = { atol = 0, rtol = 0, matched = 1.0 },
    f32 = { atol = 1e-5, rtol = 1e-5, matched = 1.0 },
  }

  -- The reference (reference.cu): every token routed in fp64 by a block of
  -- 256 threads (a thread per expert, block-wide maximums), one block that
  -- numbers each expert's assignments in order, and a thread per token unit
  -- that writes its K ids, weights and destinations.
  env.reference = {
    source = "reference.cu", accumulate = "f64", units = { topk_ids = "K", topk_weights = "K", dest = "K" },
    sample = 1024,
    derived = { "logits", "bias" },
    derive = [[
return { launches = {
  { kernel = "moe_make_logits", grid = { cdiv(T * E, 256), 1, 1 }, block = { 256, 1, 1 },
    args = { buffer("logits"), u64(T * E) } },
  { kernel = "moe_make_bias", grid = { 1, 1, 1 }, block = { 256, 1, 1 }, args = { buffer("bias"), u32(E) } },
} }
]],
    plan = ([[
assert(E <= 256 and K <= 32 and E %% G == 0 and TG * (E // G) >= K, "the reference routes E <= 256, K <= 32")
local n = T * K
local units = nsample > 0 and nsample or T
return {
  workspace = { ids = { bytes = 4 * n }, wts = { bytes = 8 * n }, off = { bytes = 4 * E }, rank = { bytes = 4 * n } },
  launches = {
    { kernel = "moe_route_ref", grid = { T, 1, 1 }, block = { 256, 1, 1 },
      args = { buffer("logits"), buffer("bias"), workspace("ids"), workspace("wts"), u32(E), u32(K), u32(G), u32(TG),
               u32(%d), f32(%s) } },
    { kernel = "moe_order_ref", grid = { 1, 1, 1 }, block = { 256, 1, 1 },
      args = { workspace("ids"), u64(n), workspace("off"), workspace("rank"), u32(E) } },
    { kernel = "moe_emit_ref", grid = { cdiv(units, 128), 1, 1 }, block = { 128, 1, 1 },
      args = { workspace("ids"), workspace("wts"), workspace("off"), workspace("rank"), buffer("positions"),
               u64(nsample), u64(T), buffer("topk_ids"), buffer("topk_weights"), buffer("dest"), u32(K) } },
  } }
]]):format(sigmoid, r.scale),
  }

  -- No library has a router: the task ships kernels (baseline.cu), a warp
  -- per token for the routing and three passes over chunks of 1024
  -- assignments for the permutation.
  env.baseline = {
    source = "baseline.cu", name = "warp-per-token router and chunked permutation",
    plan = ([[
assert(E <= 256 and K <= 32 and G <= 32, "the shipped router needs E <= 256, K <= 32, G <= 32")
local n = T * K
local chunks = cdiv(n, 1024)
return {
  workspace = { cnt = { bytes = 4 * chunks * E } },
  launches = {
    { kernel = "moe_route_baseline", grid = { cdiv(T, 4), 1, 1 }, block = { 128, 1, 1 },
      args = { buffer("logits"), buffer("bias"), buffer("topk_ids"), buffer("topk_weights"), u32(T), u32(E), u32(K),
               u32(G), u32(TG), u32(%d), f32(%s) } },
    { kernel = "moe_count_baseline", grid = { chunks, 1, 1 }, block = { 1024, 1, 1 },
      args = { buffer("topk_ids"), u64(n), workspace("cnt"), u32(E) } },
    { kernel = "moe_scan_baseline", grid = { 1, 1, 1 }, block = { 256, 1, 1 },
      args = { workspace("cnt"), u32(chunks), u32(E) } },
    { kernel = "moe_place_baseline", grid = { chunks, 1, 1 }, block = { 1024, 1, 1 },
      args = { buffer("topk_ids"), u64(n), workspace("cnt"), buffer("dest"), u32(E) } },
  } }
]]):format(sigmoid, r.scale),
    floor_note = "routing is a few kernels over a small input (the logits are T*E*4 bytes), so launch and "
      .. "serial scan time dominate at decode sizes; not measured on a GPU yet",
  }

  -- A comparison per expert and selection round (a convention).
  env.flops = function(d) return d.T * d.E * (d.K + 2 * d.G) end
  env.precision = "f32"
  env.targets = {}
  env.plan = ([[
-- Default plan: a thread per token routes, then one block permutes.
return { launches = {
  { kernel = "%s", grid = { cdiv(T, 128), 1, 1 }, block = { 128, 1, 1 }, shared = 0,
    args = { buffer("logits"), buffer("bias"), buffer("topk_ids"), buffer("topk_weights"), u32(T), u32(E), u32(K),
             u32(G), u32(TG) } },
  { kernel = "moe_permute", grid = { 1, 1, 1 }, block = { 1024, 1, 1 }, shared = 0,
    args = { buffer("topk_ids"), buffer("dest"), u32(T), u32(E), u32(K) } },
} }
]]):format(r.kernel)
end

return F
