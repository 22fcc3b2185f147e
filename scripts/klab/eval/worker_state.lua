-- klab.eval.worker_state: what a worker process keeps from job to job: the
-- CUDA context, the judge kernels, the device's description, the
-- environment recorded with every result, and per task its state
-- (klab.eval.inputs). Made on the first job that needs the GPU.
--
--   state.S                  {ctx=, judge=, props=, env=, tasks = {}, modules = {}, module_paths = {}}
--   state.ensure_gpu()       -> true | nil, why
--   state.describe()         -> {gpu_name=, driver_version=, arch=, count=} | {none = why, count = 0}

local gpu = require "klab.gpu"
local jit = require "klab.jit"
local judge_mod = require "klab.judge"
local sys = require "klab.sys"

local M = {}

M.S = { ctx = nil, judge = nil, props = nil, tasks = {}, modules = {}, module_paths = {} }
local S = M.S

function M.ensure_gpu()
  if S.ctx then return true end
  local ok, why = gpu.available()
  if not ok then return nil, why end
  local props, err = gpu.device(0)
  if not props then return nil, err end
  local ctx, cerr = gpu.context(0)
  if not ctx then return nil, cerr end
  local res, jerr = jit.compile { source = judge_mod.source(), lang = "cuda", arch = props.arch, name = "judge.cu" }
  if not res then return nil, "cannot compile the judge kernels: " .. tostring(jerr) end
  local j, oerr = judge_mod.open(ctx, res.cubin)
  if not j then return nil, "cannot load the judge kernels: " .. tostring(oerr) end
  S.ctx, S.judge, S.props = ctx, j, props
  -- Where the numbers come from, recorded with every result.
  local libs = {}
  for name, v in pairs(jit.versions()) do libs[name] = v.ok and (v.version .. " " .. (v.path or "")) or false end
  local build = require "klab.build"
  S.env = {
    host = sys.hostname(), gpu_name = props.name, gpu_uuid = props.uuid_str, arch = props.arch,
    driver_version = M.driver_version(), cuda_version = build.cuda_toolkit,
    sm_clock_mhz = props.clock_khz // 1000, mem_clock_mhz = props.mem_clock_khz // 1000, libs = libs,
  }
  return true
end

-- The driver as a reader knows it: the display driver's version from NVML
-- ("580.95.05"), with the CUDA API version the driver supports ("CUDA
-- 13.0"); the API version alone where NVML cannot tell.
function M.driver_version()
  local api = gpu.driver_version()
  local cuda = api and ("CUDA %d.%d"):format(api // 1000, (api % 1000) // 10) or "CUDA ?"
  local v = require("klab.timing").driver()
  return v and (v .. " (" .. cuda .. ")") or cuda
end

function M.describe()
  local ok, why = gpu.available()
  if not ok then return { none = tostring(why), count = 0 } end
  local props, err = gpu.device(0)
  if not props then return { none = tostring(err), count = 0 } end
  return { gpu_name = props.name, driver_version = M.driver_version(), arch = props.arch,
           count = gpu.count() or 1 }
end

return M
