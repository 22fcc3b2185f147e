-- The load stage (klab.eval.stages): the GPU, the task's state in this
-- worker, the candidate's module, its launches checked against its kernels
-- and the device, its outputs, workspace and module globals.

local verdicts = require "klab.eval.verdict"
local device = require "klab.eval.device"
local inputs = require "klab.eval.inputs"
local loaded = require "klab.eval.loaded"
local state = require "klab.eval.worker_state"
local sys = require "klab.sys"

local S = state.S
local M = {}

-- The GPU, the device's description, and the task's state; true when the
-- stages can run (else res has its verdict).
function M.attach(run)
  local ok, why = state.ensure_gpu()
  if not ok then
    verdicts.give(run.res, "unknown", { kind = "no_gpu", message = tostring(why) })
    return false
  end
  run.res.device = { name = S.props.name, arch = S.props.arch, sm_count = S.props.sm_count }
  run.res.env = S.env
  run.ts = inputs.task_state(run.job)
  inputs.revalidate(run.ts)
  return true
end

-- A launch l against what its compiled kernel takes (attrs: the function's
-- attributes): nil, or the detail of a plan_error.
function M.threads_over(l, attrs)
  local threads = l.block[1] * (l.block[2] or 1) * (l.block[3] or 1)
  if threads > attrs.max_threads then
    return { kind = "threads", kernel = l.kernel, threads = threads, max = attrs.max_threads, registers = attrs.registers }
  end
end

-- l's dynamic shared memory with its kernel's static (attrs) against the
-- device's opt-in limit per block: nil, or the detail of a plan_error.
function M.shared_over(l, attrs, limit)
  local static = attrs.static_smem or 0
  if (l.shared or 0) + static > limit then
    return { kind = "shared", kernel = l.kernel, dynamic = l.shared, static = static, limit = limit }
  end
end

function M.run(run)
  local res, job = run.res, run.job
  if not M.attach(run) then return end
  local task = job.task
  local f = io.open(job.candidate.cubin_path, "rb")
  if not f then return verdicts.give(res, "load_error", { kind = "unreadable" }) end
  local cubin = f:read("a")
  f:close()
  local t0 = sys.now()
  local mod, lerr, _, _, ldetail = S.ctx:load(cubin)
  if not mod then
    if ldetail and ldetail.sticky then res.unfit = true end
    return verdicts.give(res, "load_error", { kind = "refused", message = tostring(lerr) })
  end
  local cj = job.candidate
  local c = { launches = cj.launches, tensormaps = cj.tensormaps, workspace = cj.workspace, funcs = {}, mod = mod,
    cubin = cubin }
  run.c = c
  local st = { kernels = {} }
  res.stages.load = st
  for _, l in ipairs(c.launches) do
    if not c.funcs[l.kernel] then
      local fn, ferr = mod:func(l.kernel)
      if not fn then
        return verdicts.give(res, "plan_error", { kind = "module_lacks", kernel = l.kernel, message = tostring(ferr) })
      end
      c.funcs[l.kernel] = fn
      local attrs = fn:attributes()
      st.kernels[l.kernel] = attrs
      local over = M.threads_over(l, attrs)
      if over then return verdicts.give(res, "plan_error", over) end
    end
    local over = M.shared_over(l, st.kernels[l.kernel], S.props.smem_per_block_optin)
    if over then return verdicts.give(res, "plan_error", over) end
  end
  local outs, oerr = inputs.outputs(task, run.ts, "candidate")
  if not outs then return device.judge_failed(res, "allocate outputs", oerr) end
  local ws, werr = inputs.workspace(c)
  if not ws then return device.judge_failed(res, "allocate workspace", werr) end
  run.outs, run.ws = outs, ws
  local gok, gdetail = loaded.snapshot_globals(c, job.candidate.globals)
  if not gok then return verdicts.give(res, "load_error", gdetail) end
  -- The candidate's own device memory: its module globals, its plan's
  -- workspace and the task's scratch buffers.
  local mem = { globals = 0, workspace = 0, scratch = 0 }
  for _, g in ipairs(c.globals) do mem.globals = mem.globals + g.bytes end
  for _, w in pairs(ws) do mem.workspace = mem.workspace + w.bytes end
  for _, b in ipairs(task.buffers) do
    if b.role == "scratch" then mem.scratch = mem.scratch + b.bytes end
  end
  mem.total = mem.globals + mem.workspace + mem.scratch
  st.memory = mem
  st.seconds = sys.now() - t0
end

-- The load stage's measurement (klab.eval.stages declares it): the
-- candidate's own device memory.
function M.measurements(st, put)
  if st.memory then put("device_memory_bytes", st.memory.total) end
end

return M
