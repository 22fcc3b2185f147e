-- klab --version: klab, Lua, the CUDA toolkit and libraries found, driver and GPU.
local M = {}

local function probe(modname, fn)
  local ok, mod = pcall(require, modname)
  if not ok then return nil, "module " .. modname .. " unavailable" end
  return fn(mod)
end

function M.info()
  local build = require("klab.build")
  local info = {
    klab = require("klab.build_text").this(),
    lua = _VERSION,
    cuda_toolkit = build.cuda_toolkit,
    libraries = {},
  }
  local libs = probe("klab.jit", function(jit) return jit.versions() end) or {}
  info.libraries = libs
  local avail, reason = probe("klab.gpu", function(gpu) return gpu.available() end)
  info.driver = avail and "found" or ("not found: " .. tostring(reason))
  if avail then
    local gpu = require("klab.gpu")
    info.driver_version = gpu.driver_version()
    info.gpus = {}
    for i = 0, gpu.count() - 1 do
      local p = gpu.device(i)
      if p then info.gpus[#info.gpus + 1] = p end
    end
  end
  return info
end

local function fmtver(v)
  if type(v) == "table" then
    if v.version then return tostring(v.version) .. (v.path and ("  " .. v.path) or "") end
    if v.ok == false or v.error then return "not found (" .. tostring(v.error or v.reason) .. ")" end
  end
  if v == false or v == nil then return "not found" end
  return tostring(v)
end

function M.main(args)
  local info = M.info()
  local out = {}
  out[#out + 1] = "klab " .. info.klab
  out[#out + 1] = "Lua          " .. info.lua
  out[#out + 1] = "CUDA toolkit " .. info.cuda_toolkit .. " (headers built against)"
  local names = {}
  for k in pairs(info.libraries) do names[#names + 1] = k end
  table.sort(names)
  for _, k in ipairs(names) do
    out[#out + 1] = string.format("%-12s %s", k, fmtver(info.libraries[k]))
  end
  if info.driver_version then
    out[#out + 1] = "CUDA driver  " .. tostring(info.driver_version)
    for i, g in ipairs(info.gpus) do
      out[#out + 1] = string.format("GPU %d        %s (%s, %d SMs)", i - 1, g.name, g.arch, g.sm_count or 0)
    end
  else
    out[#out + 1] = "CUDA driver  " .. info.driver
    out[#out + 1] = "GPU          none: only stages that need no GPU can run (compile, plan checks, replay, reports)"
  end
  print(table.concat(out, "\n"))
  return 0
end

return M
