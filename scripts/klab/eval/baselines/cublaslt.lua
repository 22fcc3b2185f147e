-- klab.eval.baselines.cublaslt: a task's matmul timed against cuBLASLt
-- (klab.blas), in the worker, exactly like candidates.
--
--   prepare(W, task, io, opts) -> runner | nil, reason
--   describe(task)             -> true | nil, reason   (no GPU: klab.blas.describe
--                                 of every compute mode's spec)
--   check(task)                -> true | nil, message, field (describe, for `klab tasks --check`)
--
-- The task's baseline table: {lib = "cublaslt", op = "matmul", a = "A", b =
-- "B", c = "C" (operand buffers), modes = {"default"} | {"fp32", "tf32"}
-- (compute types: the first is timed interleaved with the candidate, the
-- others beside it), scale_a =, scale_b = (fp8 per-tensor scale buffers),
-- spec = function(dims) -> {M=, N=, K=, batch=, a_layout="mk"|"km",
-- b_layout="nk"|"kn", stride_a=, stride_b=, stride_c=, epilogue="none"|
-- "bias"|"relu"|"relu_bias"|"gelu"|"gelu_bias", bias = buffer, bias_dtype=}
-- (klab.blas.gemm_plan's fields; without spec: C = A·Bᵀ with the task's M,
-- N, K)}. W is the worker's toolkit
-- (klab.eval.gpu: ctx, region, ...); io = {inputs = name -> buffer, outputs =
-- name -> the baseline's own output buffers}; runner.run(inputs) enqueues one
-- call on those inputs (name -> buffer view), or on io.inputs. Every heuristic algorithm gets
-- a short run and the best is kept (opts.algos, default 8).

local M = {}

M.title = "cuBLASLt"

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

-- klab.blas's spec of the task's baseline in one compute mode.
local function blas_spec(task, sp, dtype, mode, algos)
  local d = task.dims
  return { dtype = dtype, compute = mode, M = sp.M or d.M, N = sp.N or d.N, K = sp.K or d.K, algos = algos or 8,
    batch = sp.batch, a_layout = sp.a_layout, b_layout = sp.b_layout, stride_a = sp.stride_a, stride_b = sp.stride_b,
    stride_c = sp.stride_c, epilogue = sp.epilogue, bias_dtype = sp.bias_dtype }
end

-- The operands' type, from the task's buffers (a map by name, or a list).
local function operand_dtype(task, name)
  local bufs = task.buffer_by_name or task.buffers or {}
  local b = bufs[name]
  if not b then
    for _, x in ipairs(bufs) do if x.name == name then b = x end end
  end
  return b and b.dtype
end

function M.describe(task)
  local b = task.baseline
  if b.op ~= "matmul" then return nil, "unknown op '" .. tostring(b.op) .. "'" end
  local src = operand_dtype(task, b.a or "A")
  local dtype = DTYPE[src]
  if not dtype then return nil, "no matmul for " .. tostring(src) end
  for _, mode in ipairs(compute_modes(b.modes)) do
    local ok, d, err = pcall(require("klab.blas").describe, blas_spec(task, b.spec or {}, dtype, mode))
    if not ok then d, err = nil, d end
    if not d then return nil, ("%s (compute %s)"):format(tostring(err), mode) end
  end
  return true
end

function M.check(task)
  local ok, err = M.describe(task)
  if not ok then return nil, "the cuBLASLt matmul does not describe: " .. tostring(err), "baseline.spec" end
  return true
end

function M.prepare(W, task, io, opts)
  opts = opts or {}
  local b = task.baseline
  if b.op ~= "matmul" then return nil, "cuBLASLt baseline: unknown op '" .. tostring(b.op) .. "'" end
  local sp = b.spec or {}
  local an, bn, cn = b.a or "A", b.b or "B", b.c or "C"
  local A, B, C = io.inputs[an], io.inputs[bn], io.outputs[cn]
  if not (A and B and C) then return nil, "cuBLASLt baseline: the task lacks operands " .. an .. ", " .. bn .. ", " .. cn end
  local src = operand_dtype(task, an)
  local dtype = DTYPE[src]
  if not dtype then return nil, "cuBLASLt baseline: no matmul for " .. tostring(src) end
  local d = task.dims
  local blas = require "klab.blas"
  local rA, rB, rC = W.region(A), W.region(B), W.region(C)
  local bias_name = sp.bias
  local bias = bias_name and io.inputs[bias_name]
  if bias_name and not bias then return nil, "cuBLASLt baseline: the task lacks the bias input " .. bias_name end
  local runner = { modes = {} }
  for _, mode in ipairs(compute_modes(b.modes)) do
    local plan, err = blas.gemm_plan(W.ctx, blas_spec(task, sp, dtype, mode, opts.algos))
    if not plan then return nil, "cuBLASLt: " .. tostring(err) end
    -- Each of the heuristic's algorithms gets a short run; the best is then
    -- timed interleaved with the candidate like any other sample.
    local runopts = { budget_s = opts.baseline_budget_s or 0.5, min_samples = 10, max_samples = 200,
      bias = bias and W.region(bias) or nil }
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
      local ro = { algo = t.best_index, scale_a = runopts.scale_a, scale_b = runopts.scale_b, bias = runopts.bias }
      -- One call on the inputs given (each timed sample has its own), or
      -- on the ones it was prepared with.
      runner.run = function(inputs)
        local a, bb = rA, rB
        local o = ro
        if inputs then
          a, bb = W.region(inputs[an]), W.region(inputs[bn])
          o = { algo = ro.algo, scale_a = ro.scale_a, scale_b = ro.scale_b, bias = ro.bias }
          if dtype == "e4m3" then
            o.scale_a, o.scale_b = W.region(inputs[b.scale_a]), W.region(inputs[b.scale_b])
          end
          if bias_name then o.bias = W.region(inputs[bias_name]) end
        end
        local ok, rerr = plan:run(a, bb, rC, o)
        if not ok then error(rerr) end
        return -1
      end
      runner.median_us, runner.mode = t.best.median_us, mode
      runner.info = { lib = "cublaslt", kind = "library", algo = t.best_index,
        first_choice_median_us = t.first.median_us, compute = mode, tile = t.best.tile, stages = t.best.stages,
        splitk = t.best.splitk, reduction_scheme = t.best.reduction_scheme,
        epilogue = sp.epilogue, batch = sp.batch }
    end
  end
  return runner
end

return M
