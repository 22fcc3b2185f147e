-- klab.eval.refs.attention_bwd: the trusted reference for the attention backward
-- tasks.
--
--   derive(S, task, set)  -> true | nil, err
--       O (bf16) and LSE (fp32) of the input set come from the reference
--       forward on the same Q, K, V, so every task is self-consistent.
--   compute(S, task, set) -> {dQ=, dK=, dV=} fp32 Buffers | nil, err
--       Dsum = rowsum(dO * O) (with the bf16 O the candidate sees), then
--       dQ = scale * dS K and dK = scale * dS^T Q, dV = P^T dO with
--       P = exp(S - LSE) and dS = P (dO V^T - Dsum); no atomics.
--
-- The kernels are klab.eval.refs.attention_fwd's (host/driver/kernels/attn_ref.cu).

local fwd = require "klab.eval.refs.attention_fwd"

local M = {}

local TILE = 64

function M.derive(S, task, set)
  local p = fwd.params(task)
  local b = set.bufs
  if not (b.O and b.LSE) then return nil, "attention backward task lacks input buffers O and LSE" end
  return fwd.forward(S, p, b.Q.ptr, b.K.ptr, b.V.ptr, 0, b.O.ptr, b.LSE.ptr)
end

function M.compute(S, task, set)
  local p = fwd.params(task)
  local ks, err = fwd.kernels(S)
  if not ks then return nil, err end
  local b = set.bufs
  local rows = p.BH * p.S
  local n = rows * p.D
  local made = {}
  local function alloc(bytes)
    local buf, aerr = S.ctx:alloc(bytes)
    if buf then made[#made + 1] = buf end
    return buf, aerr
  end
  local function fail(why)
    S.ctx:sync()
    for _, x in ipairs(made) do x:free() end
    return nil, why
  end
  local dsum, e1 = alloc(4 * rows)
  local dQ, e2 = alloc(4 * n)
  local dK, e3 = alloc(4 * n)
  local dV, e4 = alloc(4 * n)
  if not (dsum and dQ and dK and dV) then return fail(e1 or e2 or e3 or e4) end
  local a = fwd.addr
  local causal = p.causal and 1 or 0
  local ok, lerr = fwd.launch(S, ks.prep, { (rows + 7) // 8, 1, 1 }, 0, {
    a(b.O.ptr), a(b.dO.ptr), a(dsum), { "u64", rows }, { "u32", p.D } })
  if not ok then return fail(lerr) end
  local grid = { (p.S + TILE - 1) // TILE, p.BH, 1 }
  ok, lerr = fwd.launch(S, ks.dq, grid, fwd.smem("dq", p.D), {
    a(b.Q.ptr), a(b.K.ptr), a(b.V.ptr), a(b.dO.ptr), a(b.LSE.ptr), a(dsum), a(dQ),
    { "u32", p.S }, { "u32", p.D }, { "f32", p.scale }, { "u32", causal } })
  if not ok then return fail(lerr) end
  ok, lerr = fwd.launch(S, ks.dkdv, grid, fwd.smem("dkdv", p.D), {
    a(b.Q.ptr), a(b.K.ptr), a(b.V.ptr), a(b.dO.ptr), a(b.LSE.ptr), a(dsum), a(dK), a(dV),
    { "u32", p.S }, { "u32", p.D }, { "f32", p.scale }, { "u32", causal } })
  if not ok then return fail(lerr) end
  -- Dsum is scratch: wait for the kernels before giving it back.
  local sok, serr = S.ctx:sync()
  if not sok then return fail(serr) end
  dsum:free()
  return { dQ = dQ, dK = dK, dV = dV }
end

return M
