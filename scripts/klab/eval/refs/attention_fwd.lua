-- klab.eval.refs.attention_fwd: the trusted reference for the attention forward
-- tasks (and the kernels the backward reference shares).
--
-- klab's own kernels (host/driver/kernels/attn_ref.cu, from klab.dnn.ref_source()),
-- compiled with NVRTC for the device and loaded once per worker and
-- context: fp32 accumulation, precise exp/log, one 64-row tile of queries
-- per block, memory linear in S. See docs/attention.md.
--
--   compute(S, task, set) -> {O = fp32 Buffer, LSE = fp32 Buffer} | nil, err
--   M.params(task)        -> {BH=, S=, D=, scale=, causal=} (pure)
--   M.smem(kernel, D)     -> bytes of dynamic shared memory (pure)
--   M.kernels(S)          -> {fwd=, prep=, dq=, dkdv=} Functions | nil, err
--   M.forward(S, p, q, k, v, of, ob, lse) -> true | nil, err
--       q, k, v, ob: device addresses of bf16 [BH,S,D]; of: fp32 O or 0;
--       ob: bf16 O or 0; lse: fp32 [BH,S].
--
-- S is the worker's state {ctx=, judge=, props=}; task the plain spec the
-- worker sees (dims B, H, S, D; reference = {causal=, scale=}).

local M = {}

local TILE = 64

-- Kernel handles per context (a worker has one; tests may open more).
local cache = setmetatable({}, { __mode = "k" })

function M.params(task)
  local d, r = task.dims, task.reference or {}
  local causal = r.causal == true or d.causal == 1
  local D = d.D
  if D % 4 ~= 0 or D > 128 then
    error(("the reference attention kernels need D %% 4 == 0 and D <= 128, got D=%d"):format(D))
  end
  return { BH = d.B * d.H, S = d.S, D = D, causal = causal, scale = r.scale or 1 / math.sqrt(D) }
end

-- Dynamic shared memory of each kernel (attn_ref.cu states the layouts).
function M.smem(kernel, D)
  local L = D + 1
  if kernel == "fwd" then return 4 * (3 * TILE * L + TILE * 65) end
  if kernel == "dq" then return 4 * (4 * TILE * L + TILE * 65) end
  if kernel == "dkdv" then return 4 * (4 * TILE * L + 2 * TILE * 65 + 2 * TILE) end
  return 0
end

function M.kernels(S)
  local k = cache[S.ctx]
  if k then return k end
  local jit = require "klab.jit"
  local dnn = require "klab.dnn"
  local res, err = jit.compile { source = dnn.ref_source(), lang = "cuda", arch = S.props.arch, name = "attn_ref.cu" }
  if not res then return nil, "cannot compile the reference attention kernels: " .. tostring(err) end
  local mod, lerr = S.ctx:load(res.cubin)
  if not mod then return nil, "cannot load the reference attention kernels: " .. tostring(lerr) end
  k = { mod = mod }
  for name, entry in pairs { fwd = "attn_ref_fwd", prep = "attn_ref_bwd_prep", dq = "attn_ref_bwd_dq",
                             dkdv = "attn_ref_bwd_dkdv" } do
    local fn, ferr = mod:func(entry)
    if not fn then return nil, "reference attention kernel " .. entry .. ": " .. tostring(ferr) end
    k[name] = fn
  end
  cache[S.ctx] = k
  return k
end

local function addr(x)
  if type(x) == "number" then return { "u64", x } end
  return { "u64", x and x:ptr() or 0 }
end
M.addr = addr

local function launch(S, fn, grid, shared, args)
  local ok, err = S.ctx:launch(fn, { grid = grid, block = { 256, 1, 1 }, shared = shared, args = args })
  if not ok then return nil, "reference attention launch failed: " .. tostring(err) end
  return true
end
M.launch = launch

function M.forward(S, p, q, k, v, of, ob, lse)
  local ks, err = M.kernels(S)
  if not ks then return nil, err end
  return launch(S, ks.fwd, { (p.S + TILE - 1) // TILE, p.BH, 1 }, M.smem("fwd", p.D), {
    addr(q), addr(k), addr(v), addr(of), addr(ob), addr(lse),
    { "u32", p.S }, { "u32", p.D }, { "f32", p.scale }, { "u32", p.causal and 1 or 0 } })
end

function M.compute(S, task, set)
  local p = M.params(task)
  local n = p.BH * p.S * p.D
  local O, err = S.ctx:alloc(4 * n)
  if not O then return nil, err end
  local LSE, lerr = S.ctx:alloc(4 * p.BH * p.S)
  if not LSE then
    O:free()
    return nil, lerr
  end
  local b = set.bufs
  local ok, ferr = M.forward(S, p, b.Q.ptr, b.K.ptr, b.V.ptr, O, 0, LSE)
  if not ok then
    O:free()
    LSE:free()
    return nil, ferr
  end
  return { O = O, LSE = LSE }
end

return M
