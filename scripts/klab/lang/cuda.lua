-- klab.lang.cuda: CUDA C++ candidates (kernel.cu), compiled by NVRTC in
-- klab.jit's confined child; a source that names CuTe's or CUTLASS's
-- headers gets their folder (klab.lang.cutlass) and records its version.
-- The fields are klab.lang's (scripts/klab/lang/init.lua).

local ptx = require "klab.lang.ptx"

local M = {}

M.title = "CUDA C++"
M.file = "kernel.cu"
M.suffixes = { ".cu", ".cuh" }
M.fences = { "cuda", "cu", "c++", "cpp" }
M.more_fences = { "cuh", "cxx", "cc", "c", "h", "hpp" }
M.kernel_hint = "a __global__ function in CUDA"
M.reply_default = true
M.records = { "cutlass" }
M.jit = "cuda"
M.mutants = "klab.mutate.cuda"

-- A __global__ function, in a text that does not read as PTX.
function M.untagged(code) return code:find("__global__") ~= nil and not ptx.untagged(code) end

function M.kernel(code) return code:find("__global__") ~= nil end

function M.build(run)
  local c = run.cand
  local cutlass = require "klab.lang.cutlass"
  local include
  if cutlass.wanted(c.code) then
    local why
    include, why = cutlass.include_dir()
    if not include then return nil, (c.file or c.name) .. ": " .. why, "EUNSUPPORTED" end
  end
  local res, err, code, partial = ptx.as_is(run, M.jit, include)
  if res and include then res.cutlass = cutlass.version(include) or "unknown" end
  return res, err, code, partial
end

return M
