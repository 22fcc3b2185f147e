-- klab.eval.sanitizer: compute-sanitizer memcheck over a candidate, as
-- PTXBench runs it before timing, and where NVIDIA's command-line tools
-- are found.
--
--   sanitizer.find_tool(name, env_var) -> path of ncu / compute-sanitizer, or nil
--   sanitizer.path()                   -> the compute-sanitizer binary, or nil
--   sanitizer.parse(out)               -> errors, first lines of compute-sanitizer's output
--   sanitizer.run(job, env)            -> the sanitizer stage {status=, errors=, first=, ...}

local M = {}

-- An NVIDIA command-line tool (ncu, compute-sanitizer): $<env_var> when
-- set (and nothing else then), else CUDA_HOME/bin (default /usr/local/cuda),
-- else PATH; nil when absent.
function M.find_tool(name, env_var)
  local function exe(p)
    if not p or p == "" then return nil end
    local f = io.open(p, "rb")
    if f then f:close() return p end
    return nil
  end
  local env = env_var and os.getenv(env_var)
  if env and env ~= "" then return exe(env) end
  local home = os.getenv("CUDA_HOME")
  if not home or home == "" then home = "/usr/local/cuda" end
  local p = exe(home .. "/bin/" .. name)
  if p then return p end
  for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
    p = exe(dir .. "/" .. name)
    if p then return p end
  end
  return nil
end

-- The compute-sanitizer binary: $KLAB_SANITIZER, CUDA_HOME/bin, PATH.
function M.path() return M.find_tool("compute-sanitizer", "KLAB_SANITIZER") end

-- Parses compute-sanitizer's output: the "ERROR SUMMARY: N errors" line
-- and the first error lines. Pure (tested without the tool).
function M.parse(out)
  local n = tonumber((out or ""):match("ERROR SUMMARY:%s*(%d+)"))
  local first = {}
  for line in (out or ""):gmatch("[^\n]+") do
    if line:find("^========= [%u]") and not line:find("ERROR SUMMARY") and not line:find("COMPUTE%-SANITIZER")
      and #first < 5 then
      first[#first + 1] = line:gsub("^========= ", "")
    end
  end
  return n, first
end

-- Runs job (an evaluation's worker job: its load and replay stages, the
-- planned launches twice on the first input set, no profiler) in a worker of
-- its own under memcheck; the worker ends at the end of its input so that
-- the tool prints its summary. API errors are not the kernel's: klab's own
-- probing (the parameter layout query past the last parameter) returns
-- them on purpose.
function M.run(job, env)
  local tool = M.path()
  if not tool then return { status = "unknown", reason = "compute-sanitizer not found (CUDA_HOME/bin, PATH)" } end
  local sup <close> = require("klab.proc.supervisor").new {
    argv = { tool, "--tool", "memcheck", "--report-api-errors", "no", "--error-exitcode", "0",
      require("klab.sys").exe(), "--worker" },
    env = env, deadline = 600 }
  local j = {}
  for k, v in pairs(job) do j[k] = v end
  j.stages, j.opts = { "load", "replay" }, { runs = 2 }
  local rep = sup:run({ module = "klab.eval.gpu", fn = "run", args = j })
  local fin = sup:finish(60) or {}
  local out = (rep.output_tail or "") .. (fin.output or "")
  local n, first = M.parse(out)
  if not n then
    return { status = "unknown", reason = "no ERROR SUMMARY in compute-sanitizer's output (the worker "
      .. tostring(rep.status) .. (rep.error and (": " .. tostring(rep.error)) or "") .. ")", tail = out:sub(-2000) }
  end
  return { status = "ok", tool = tool, errors = n, first = first, clean = n == 0 }
end

return M
