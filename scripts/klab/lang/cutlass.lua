-- klab.lang.cutlass: CUTLASS's and CuTe's C++ headers for CUDA C++ candidates.
--
--   cutlass.include_dir() -> the folder (holding cute/ and cutlass/) | nil, reason
--   cutlass.version(dir)  -> "4.2.0" (from cutlass/version.h) | nil
--   cutlass.wanted(code)  -> true when the source names a CuTe or CUTLASS header
--
-- The folder is $KLAB_CUTLASS_INCLUDE (a user's own CUTLASS), else the one
-- the deps step installs from the pinned nvidia-cutlass wheel
-- (tools/deps_langs.sh): <language folder>/cutlass-VERSION/include. A
-- candidate that includes these headers compiles in the same confined child
-- as any CUDA C++, which may read this folder besides the toolkit's and
-- nothing else (klab.jit's include option).

local fs = require "klab.fs"
local versions = require "klab.lang.versions"

local M = {}

M.pinned = versions.cutlass

function M.include_dir()
  local own = os.getenv("KLAB_CUTLASS_INCLUDE")
  if own and own ~= "" then
    if fs.type(own .. "/cute") ~= "dir" then
      return nil, "KLAB_CUTLASS_INCLUDE=" .. own .. " holds no cute/ folder (name CUTLASS's include folder)"
    end
    return own
  end
  local base = versions.dir()
  local dir = base and (base .. "/cutlass-" .. M.pinned .. "/include")
  if not dir or fs.type(dir .. "/cute") ~= "dir" then
    return nil, string.format("CUTLASS %s is not installed%s (make deps installs its headers from PyPI, or set "
      .. "KLAB_CUTLASS_INCLUDE to a CUTLASS include folder)", M.pinned, dir and (" in " .. dir) or "")
  end
  return dir
end

function M.version(dir)
  local text = fs.read(dir .. "/cutlass/version.h", 1 << 20)
  if not text then return nil end
  local major, minor, patch = text:match("#define%s+CUTLASS_MAJOR%s+(%d+)"), text:match("#define%s+CUTLASS_MINOR%s+(%d+)"),
    text:match("#define%s+CUTLASS_PATCH%s+(%d+)")
  return major and minor and (major .. "." .. minor .. "." .. (patch or "0")) or nil
end

-- A directive that names cute/... or cutlass/... (quoted or bracketed).
function M.wanted(code)
  for line in code:gmatch("[^\n]*") do
    if line:match("^%s*#%s*include%s*[<\"]%s*cute/") or line:match("^%s*#%s*include%s*[<\"]%s*cutlass/") then
      return true
    end
  end
  return false
end

return M
