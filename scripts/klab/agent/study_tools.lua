-- klab.agent.study_tools: the tools a model gets in a tool-calling study
-- (klab.agent.study). The model has no files: each tool takes the device
-- code itself (and optionally a launch plan), and the task is the
-- trajectory's. The bodies are klab mcp's (klab.agent.tools).
--
--   study_tools.LIST                     {{name=, description=, schema=, gpu=}, ...}
--   study_tools.candidate(args, name)    -> a candidate (klab.eval.candidate) | nil, why
--   study_tools.compact_compile(record)  -> what the model reads of a compile record
--
-- What the model reads is deterministic for the same code on the same
-- machine (no compile times, no cache flags), so a study run again from its
-- stored replies sends the same requests.

local candidate = require "klab.eval.candidate"

local M = {}

local CODE = { type = "string", maxLength = candidate.MAX_BYTES,
  description = "the complete device code: CUDA C++ (NVRTC, extern \"C\" kernels) or PTX" }
-- The languages klab.jit compiles as they are (klab.lang's `jit`): the
-- compile tool hands code to it directly.
local LANG = { type = "string", enum = require("klab.lang").having("jit"),
  description = "the language of code (default cuda)" }
local PLAN = { type = "string", maxLength = 65536,
  description = "optionally a launch plan: a Lua chunk returning {launches = {...}} (default: the task's plan)" }

local function code_schema()
  return { type = "object", properties = { code = CODE, lang = LANG, plan = PLAN }, required = { "code" },
    additionalProperties = false }
end

M.LIST = {
  { name = "compile", description = "Compile your code for the target without running it: per kernel the registers, "
      .. "spills, shared memory and stack, the census of PTX instruction families, the compiler's errors and log.",
    schema = code_schema() },
  { name = "run", gpu = true, description = "Run your code once on the task's smallest shape: correct or not, with "
      .. "the worst element when wrong. Not timed; not a submission.",
    schema = code_schema() },
  { name = "profile", gpu = true, description = "Profile your code on the task's smallest shape: which target "
      .. "instruction families executed, FLOPs by path, memory figures. Not a submission.",
    schema = code_schema() },
  { name = "submit", gpu = true, description = "Submit your code for the full evaluation on every shape of the task "
      .. "(correctness, timing against the library). Each submission counts against your budget.",
    schema = code_schema() },
}

function M.candidate(a, name)
  return candidate.new { code = a.code, lang = a.lang or "cuda", plan = a.plan, name = name }
end

function M.compact_compile(r)
  local kernels = {}
  for i, k in ipairs(r.kernels or {}) do
    kernels[i] = { name = k.name, registers = k.registers, spill_stores = k.spill_stores, spill_loads = k.spill_loads,
      shared_static = k.shared_static, stack = k.local_bytes }
  end
  local census = {}
  for fam, n in pairs(r.census or {}) do
    if fam ~= "instructions" and type(n) == "number" and n > 0 then census[fam] = n end
  end
  local log = r.log
  if type(log) == "string" and #log > 4000 then log = log:sub(1, 4000) .. "\n[... cut]" end
  return { ok = r.ok, error = r.error, kernels = kernels, census = census,
    instructions = r.census and r.census.instructions or nil, log = log }
end

return M
