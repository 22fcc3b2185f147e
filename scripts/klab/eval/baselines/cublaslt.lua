-- klab.eval.baselines.cublaslt: a task's matmul timed against cuBLASLt
-- (klab.blas), in the worker, exactly like candidates.
--
--   prepare(W, task, io, opts) -> runner | nil, reason
--
-- The task's baseline table: {lib = "cublaslt", op = "matmul", layout =
-- "nt", a = "A", b = "B", c = "C" (operand buffers; C = A·Bᵀ, row-major),
-- modes = {"default"} | {"fp32", "tf32"} (compute types: the first is timed
-- interleaved with the candidate, the others beside it), scale_a =,
-- scale_b = (fp8 per-tensor scale buffers)}. W is the worker's toolkit
-- (klab.eval.gpu: ctx, region, ...); io = {inputs = name -> buffer, outputs =
-- name -> the baseline's own output buffers}. Every heuristic algorithm gets
-- a short run and the best is kept (opts.algos, default 8).

local M = {}

local DTYPE = { bf16 = "bf16", f16 = "f16", fp8e4m3 = "e4m3", f32 = "f32" }

local function compute_modes(modes)
  local out = {}
  for _, m in ipairs(modes or {}) do
    if m == "fp32" or m == "strict" or m == "default" then out[#out + 1] = "f32"
    elseif m == "tf32" then out[#out + 1] = "tf32" end
  end
  if #out == 0 then out = { "f32" } end
  return out
end

function M.prepare(W, task, io, opts)
  opts = opts or {}
  local b = task.baseline
  if b.op ~= "matmul" then return nil, "cuBLASLt baseline: unknown op '" .. tostring(b.op) .. "'" end
  if (b.layout or "nt") ~= "nt" then return nil, "cuBLASLt baseline: only layout nt (C = A·Bᵀ) is supported" end
  local an, bn, cn = b.a or "A", b.b or "B", b.c or "C"
  local A, B, C = io.inputs[an], io.inputs[bn], io.outputs[cn]
  if not (A and B and C) then return nil, "cuBLASLt baseline: the task lacks operands " .. an .. ", " .. bn .. ", " .. cn end
  local src = task.buffer_by_name[an].dtype
  local dtype = DTYPE[src]
  if not dtype then return nil, "cuBLASLt baseline: no matmul for " .. tostring(src) end
  local d = task.dims
  local blas = require "klab.blas"
  local rA, rB, rC = W.region(A), W.region(B), W.region(C)
  local runner = { modes = {} }
  for _, mode in ipairs(compute_modes(b.modes)) do
    local plan, err = blas.gemm_plan(W.ctx, { dtype = dtype, compute = mode, M = d.M, N = d.N, K = d.K,
      algos = opts.algos or 8 })
    if not plan then return nil, "cuBLASLt: " .. tostring(err) end
    -- Each of the heuristic's algorithms gets a short run; the best is then
    -- timed interleaved with the candidate like any other sample.
    local runopts = { budget_s = opts.baseline_budget_s or 0.5, min_samples = 10, max_samples = 200 }
    if dtype == "e4m3" then
      runopts.scale_a = W.region(io.inputs[b.scale_a])
      runopts.scale_b = W.region(io.inputs[b.scale_b])
    end
    local t, terr = plan:time(rA, rB, rC, runopts)
    if not t then return nil, "cuBLASLt timing: " .. tostring(terr) end
    runner.modes[mode] = { median_us = t.best.median_us, algo = t.best_index, algos = #t.algos,
      first_choice_median_us = t.first.median_us, plan = plan }
    if not runner.run then
      -- The first mode listed (strict FP32 for fp32 tasks) is the one
      -- interleaved with the candidate; the others are reported beside it.
      local ro = { algo = t.best_index, scale_a = runopts.scale_a, scale_b = runopts.scale_b }
      runner.run = function()
        local ok, rerr = plan:run(rA, rB, rC, ro)
        if not ok then error(rerr) end
        return -1
      end
      runner.median_us, runner.mode = t.best.median_us, mode
      runner.info = { lib = "cublaslt", kind = "library", algo = t.best_index,
        first_choice_median_us = t.first.median_us, compute = mode }
    end
  end
  return runner
end

return M
