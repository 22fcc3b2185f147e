-- What the three sampling tasks share (top_k_sampling.lua,
-- top_p_sampling.lua, top_k_top_p_sampling.lua): FlashInfer's
-- top_k_sampling_from_probs, top_p_sampling_from_probs and
-- top_k_top_p_sampling_from_probs (top-k first), with the uniform draws
-- given as an input buffer so that the sampled token is a function of the
-- inputs and can be compared exactly.
--
-- Exactness. A sampler compares running sums of probabilities with a
-- threshold; a sum rounded differently lands a draw on the other side of a
-- boundary. So the inputs are made exact (derive, reference.cu): every
-- probability is a whole number of grains of 2^-16 (a softmax of drawn
-- logits rounded down, the lost grains given to the row's first largest
-- element, each row summing to exactly 1), top_p and the draws are
-- multiples of 1/256. Then every sum of probabilities is exact in fp32 in
-- any order, and so are top_p * S and u * S (at most 24 significant bits):
-- any kernel that computes in fp32 without dividing gets the same tokens as
-- the fp64 reference. The tie rules are stated in the description.
local S = {}

-- The modes the reference kernel takes (bits: 1 top-k, 2 top-p).
local MODES = { top_k = 1, top_p = 2, top_k_top_p = 3 }

local RULES = {
  top_k = [[
Top-k keeps token i of row b iff fewer than top_k[b] tokens of the row have a
probability strictly greater than probs[b, i] (so every token tied with the
k-th largest probability is kept).]],
  top_p = [[
Top-p keeps token i of row b iff the total probability of the row's tokens
with a probability strictly greater than probs[b, i] is less than top_p[b]
(the smallest set of most likely tokens whose mass reaches top_p, with every
token tied with the last one).]],
  top_k_top_p = [[
First top-k: token i of row b passes iff fewer than top_k[b] tokens of the
row have a probability strictly greater than probs[b, i]; let S_k be the
mass of the tokens that pass. Then top-p among them: a passing token i is
kept iff the total probability of the passing tokens with a probability
strictly greater than probs[b, i] is less than top_p[b] * S_k (top-p on the
renormalized top-k distribution, without dividing).]],
}

local SIGNATURE = {
  top_k = "const float *probs, const int *top_k, const float *uniform, int *samples, unsigned B, unsigned V",
  top_p = "const float *probs, const float *top_p, const float *uniform, int *samples, unsigned B, unsigned V",
  top_k_top_p = "const float *probs, const int *top_k, const float *top_p, const float *uniform, int *samples,\n"
    .. "      unsigned B, unsigned V",
}

local ARGS = {
  top_k = [[buffer("probs"), buffer("top_k"), buffer("uniform")]],
  top_p = [[buffer("probs"), buffer("top_p"), buffer("uniform")]],
  top_k_top_p = [[buffer("probs"), buffer("top_k"), buffer("top_p"), buffer("uniform")]],
}

-- Vocabularies of served models (FlashInfer-Bench's sampling definitions
-- are per vocabulary): a decode batch of 64 sequences of DeepSeek-V3, a
-- large batch of 1024 of Llama-3.1-8B (512 MiB of probabilities, the main
-- shape), Qwen3-32B's and a 256k vocabulary, and a small odd shape.
S.variants = {
  { B = 1024, V = 128256, name = "llama3.1-8b_b1024", tags = { "main", "Llama-3.1-8B", "Llama-3.1-70B" } },
  { B = 64, V = 129280, name = "deepseek-v3_b64", tags = { "decode", "DeepSeek-V3" } },
  { B = 256, V = 151936, name = "qwen3-32b_b256", tags = { "Qwen3-32B" } },
  { B = 128, V = 262144, name = "v262144_b128", tags = { "vocab256k", "Gemma-3" } },
  { B = 7, V = 32000, name = "v32000_b7", tags = { "odd", "small", "vocab32k" } },
}

-- Sets every field of the task in env. kind: "top_k", "top_p" or "top_k_top_p".
function S.define(env, kind)
  local mode = MODES[kind]
  env.name = kind .. "_sampling_f32"
  env.family = "serving"
  env.kernel = kind .. "_sampling"
  env.tags = { "serving", "sampling", "f32", "memory-bound", "flashinfer-bench" }
  env.description = ([[
Write a CUDA kernel named `%s`: sample one token per row of a batch
of probability distributions. probs is fp32 [B, V] (row-major, V
contiguous); every row sums to 1 and every probability is a multiple of
2^-16. ]] .. (mode & 1 == 1 and "top_k is int32 [B] (1 <= top_k[b] <= V). " or "")
    .. (mode & 2 == 2 and "top_p is fp32 [B], a multiple of 1/256 in (0, 1). " or "") .. [[
uniform is fp32 [B], the row's uniform draw u, a multiple of 1/256 in [0, 1).
%s
Sampling: let C_i be the total probability of the kept tokens of index
<= i (vocabulary order) and S the kept tokens' total; samples[b] (int32) is
the smallest kept i with C_i > u * S. These rules decide every tie; every
sum of these probabilities, and the products top_p * S and u * S, are exact
in fp32, so a kernel that compares without dividing matches exactly.
probs, top_k, top_p and uniform must not be modified. Here B=${B}, V=${V}.
With the default launch plan the kernel is
  extern "C" __global__ void %s(%s)
launched with one block of 512 threads per row (grid (B, 1, 1)) and no
dynamic shared memory. Send your own plan to change any of this.]]):format(kind .. "_sampling", RULES[kind],
    kind .. "_sampling", SIGNATURE[kind])

  env.dims = { "B", "V" }
  env.variants = S.variants
  env.buffers = {
    probs = { role = "input", dtype = "f32", shape = { "B", "V" } },
    uniform = { role = "input", dtype = "f32", shape = { "B" } },
    samples = { role = "output", dtype = "i32", shape = { "B" } },
  }
  if mode & 1 == 1 then env.buffers.top_k = { role = "input", dtype = "i32", shape = { "B" } } end
  if mode & 2 == 2 then env.buffers.top_p = { role = "input", dtype = "f32", shape = { "B" } } end

  -- probs holds logits until derive turns each row into its softmax in
  -- grains: N(0, 3²) logits put about 0.2 of a row of 128k on its largest
  -- token and leave some 5,000 tokens above one grain. top_k in [1, 100]
  -- and top_p in [0.5, 0.95], per row, as served requests set them.
  env.inputs = {
    probs = { dist = "normal", mean = 0, std = 3 },
    uniform = { dist = "uniform", lo = 0, hi = 1 },
  }
  if mode & 1 == 1 then env.inputs.top_k = { dist = "int", lo = 1, hi = 100 } end
  if mode & 2 == 2 then env.inputs.top_p = { dist = "uniform", lo = 0.5, hi = 0.95 } end

  -- Broader rows (N(0, 2²): tens of thousands of tokens above a grain, the
  -- nucleus thousands wide), PTXBench's spiky mix on the logits (a few
  -- tokens hold nearly all the mass: top-p keeps one or two), and logits
  -- drawn as integers 0..8, where thousands of tokens share each of the
  -- largest probabilities: the tie rules decide which are kept. No scaled
  -- entries: a scale would only change the logits' spread, which these
  -- laws already cover.
  env.trials = 2
  env.distributions = {
    { name = "peaked" },
    { name = "broad", inputs = { probs = { dist = "normal", mean = 0, std = 2 } } },
    { name = "spiky", inputs = { probs = { dist = "spiky", std = 1, spike_std = 10, p = 0.001 } } },
    { name = "ties", inputs = { probs = { dist = "int", lo = 0, hi = 8 } } },
  }

  -- A token id is right or wrong: every one must equal the reference's.
  env.tolerance = { i32 = { atol = 0, rtol = 0, matched = 1.0 } }

  -- The reference (reference.cu): a block per row, fp64 (exact here),
  -- thresholds found by a search that tries 15 points per pass over the row
  -- (about five passes per filter). A unit is a row; a timed run's check
  -- recomputes 64 rows, since each costs several passes over V.
  local derive_p = mode & 2 == 2 and [[
    { kernel = "sampling_make_draws", grid = { cdiv(B, 256), 1, 1 }, block = { 256, 1, 1 },
      args = { buffer("top_p"), u64(B), u32(1) } },
]] or ""
  env.reference = {
    source = "reference.cu", accumulate = "f64", units = { samples = 1 }, sample = 64,
    derived = mode & 2 == 2 and { "probs", "uniform", "top_p" } or { "probs", "uniform" },
    derive = [[
return { launches = {
    { kernel = "sampling_make_probs", grid = { B, 1, 1 }, block = { 256, 1, 1 }, args = { buffer("probs"), u32(V) } },
    { kernel = "sampling_make_draws", grid = { cdiv(B, 256), 1, 1 }, block = { 256, 1, 1 },
      args = { buffer("uniform"), u64(B), u32(0) } },
]] .. derive_p .. [[
} }
]],
    plan = ([[
local rows = nsample > 0 and nsample or B
return { launches = { { kernel = "sampling_ref", grid = { rows, 1, 1 }, block = { 256, 1, 1 },
  args = { buffer("probs"), %s, %s, buffer("uniform"), buffer("positions"), u64(nsample), buffer("samples"),
           u32(V), u32(%d) } } } }
]]):format(mode & 1 == 1 and [[buffer("top_k")]] or "u64(0)", mode & 2 == 2 and [[buffer("top_p")]] or "u64(0)",
      mode),
  }

  -- No library in klab samples tokens: the task ships a kernel
  -- (baseline.cu), a block of 1024 threads per row that finds each
  -- threshold from two histograms of the grains (their high and low 8 bits)
  -- and reads the row three to five times.
  env.baseline = {
    source = "baseline.cu", name = "block-per-row histogram sampler",
    plan = ([[
assert(V %% 4 == 0, "the shipped sampler reads rows as float4: V %% 4 == 0")
return { launches = { { kernel = "sampling_baseline", grid = { B, 1, 1 }, block = { 1024, 1, 1 },
  args = { buffer("probs"), %s, %s, buffer("uniform"), buffer("samples"), u32(V), u32(%d) } } } }
]]):format(mode & 1 == 1 and [[buffer("top_k")]] or "u64(0)", mode & 2 == 2 and [[buffer("top_p")]] or "u64(0)",
      mode),
    floor_note = "the shipped sampler reads each row three to five times (histograms of the high and low bits of the "
      .. "grains, then the draw), where the floor counts one read; not measured on a GPU yet",
  }

  -- A comparison per token and filter (a convention); bytes: the row read
  -- once and the per-row scalars.
  env.flops = function(d) return d.B * d.V end
  env.precision = "f32"
  env.targets = {}
  env.plan = ([[
-- Default plan: one block of 512 threads per row.
return { launches = { { kernel = "%s", grid = { B, 1, 1 }, block = { 512, 1, 1 }, shared = 0,
  args = { %s, buffer("samples"), u32(B), u32(V) } } } }
]]):format(kind .. "_sampling", ARGS[kind])
end

return S
